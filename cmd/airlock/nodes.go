package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/client"
)

const nodesUsage = `Usage:
  airlock nodes [--json]          the cluster's nodes: address, lease, capacity, load
  airlock nodes drain ID          no new placements on node ID; its running work ends normally
  airlock nodes undrain ID        placements on node ID resume

Each acts through a server of the cluster: --server URL (or $AIRLOCK_SERVER), as
the tenant of $AIRLOCK_TOKEN. Any tenant may list the nodes; drain and undrain
need a tenant of the server's --admin-tenants.
`

// nodesCmd is `airlock nodes [drain|undrain ID]`: cluster mode's operations,
// always through a server (a node's view of the cluster is its database's).
func nodesCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub := ""
	if len(args) > 0 && (args[0] == "drain" || args[0] == "undrain") {
		sub, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("airlock nodes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, nodesUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	server := serverFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return errReported
	}
	want := 0
	if sub != "" {
		want = 1
	}
	if fs.NArg() != want {
		fs.Usage()
		if sub == "" {
			return fmt.Errorf("nodes: unexpected argument %q (subcommands: drain ID, undrain ID)", fs.Arg(0))
		}
		return fmt.Errorf("nodes %s: want one node id, got %d arguments", sub, fs.NArg())
	}
	if *server == "" {
		return errors.New("nodes: the nodes are a cluster's: give a server of it with --server URL or $AIRLOCK_SERVER")
	}
	c, err := client.New(*server, os.Getenv("AIRLOCK_TOKEN"))
	if err != nil {
		return err
	}
	if sub != "" {
		n, err := c.Drain(ctx, fs.Arg(0), sub == "drain")
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, n)
		}
		if n.Draining {
			fmt.Fprintf(stdout, "%s: draining (no new placements; %d jobs go on)\n", n.ID, n.Running)
		} else {
			fmt.Fprintf(stdout, "%s: taking placements\n", n.ID)
		}
		return nil
	}
	list, err := c.Nodes(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, list)
	}
	printNodes(stdout, list)
	return nil
}

// printNodes writes the nodes as a table, like airlock ps; the node that
// answered is marked with *.
func printNodes(w io.Writer, list api.NodeList) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tADDRESS\tSTATE\tRUNNING\tMEMORY IN USE\tLAST HEARTBEAT")
	for _, n := range list.Nodes {
		state := "live"
		switch {
		case !n.Live:
			state = "dead"
		case n.Draining:
			state = "draining"
		}
		id := n.ID
		if id == list.Self {
			id += " *"
		}
		age := n.LeaseAge.Duration().Round(100 * time.Millisecond)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s/%s\t%s ago (lease %s)\n", id, n.Address, state, n.Running, n.Slots,
			humanBytes(n.MemoryInUse), humanBytes(n.Memory), age, n.Lease.Duration())
	}
	tw.Flush()
}
