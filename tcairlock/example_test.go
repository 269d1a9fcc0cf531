package tcairlock_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/testcontainers/testcontainers-go"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/tcairlock"
)

// Start a throw-away airlock server, run a command, start a background job and
// read its output, then terminate the server.
func ExampleRun() {
	ctx := context.Background()
	ctr, err := tcairlock.Run(ctx)
	defer func() {
		if err := testcontainers.TerminateContainer(ctr); err != nil {
			log.Printf("terminate: %v", err)
		}
	}()
	if err != nil {
		log.Printf("start airlock: %v", err)
		return
	}
	cli, err := ctr.Client(ctx)
	if err != nil {
		log.Printf("client: %v", err)
		return
	}

	res, err := cli.Run(ctx, executor.Spec{Command: "echo hi"}, nil, nil)
	if err != nil {
		log.Printf("run: %v", err)
		return
	}
	fmt.Printf("run: %s exit %d: %s", res.State, res.ExitCode, res.Stdout)

	job, err := cli.Start(ctx, executor.Spec{Command: "echo working; sleep 0.5; echo done"})
	if err != nil {
		log.Printf("start: %v", err)
		return
	}
	end, err := cli.Wait(ctx, job.ID)
	if err != nil {
		log.Printf("wait: %v", err)
		return
	}
	logs, err := cli.Logs(ctx, job.ID, executor.LogsOptions{Stream: "stdout"})
	if err != nil {
		log.Printf("logs: %v", err)
		return
	}
	fmt.Printf("job: %s exit %d:\n%s", end.State, end.ExitCode, logs.Stdout)

	// Output:
	// run: completed exit 0: hi
	// job: completed exit 0:
	// working
	// done
}

// An agent's view: the MCP tools over /mcp, with the go-sdk's client.
func ExampleContainer_mcp() {
	ctx := context.Background()
	ctr, err := tcairlock.Run(ctx)
	defer func() {
		if err := testcontainers.TerminateContainer(ctr); err != nil {
			log.Printf("terminate: %v", err)
		}
	}()
	if err != nil {
		log.Printf("start airlock: %v", err)
		return
	}
	url, err := ctr.URL(ctx)
	if err != nil {
		log.Printf("url: %v", err)
		return
	}
	transport := &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: ctr.HTTPClient()}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "example-agent", Version: "v1"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		log.Printf("connect: %v", err)
		return
	}
	defer session.Close()
	out, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"command": "echo hello from mcp"}})
	if err != nil {
		log.Printf("call run: %v", err)
		return
	}
	res := out.StructuredContent.(map[string]any)
	fmt.Printf("%s exit %v: %s", res["state"], res["exit_code"], res["stdout"])

	// Output:
	// completed exit 0: hello from mcp
}
