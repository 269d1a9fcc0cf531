package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/airlock-sandbox/airlock/executor"
	units "github.com/docker/go-units"
)

func imagesCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("images: give a subcommand: build [NAME...] or ls")
	}
	ex, err := executor.New()
	if err != nil {
		return err
	}
	defer ex.Close()
	switch args[0] {
	case "build":
		return ex.BuildImages(ctx, stderr, args[1:]...)
	case "ls":
		list, err := ex.Images(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "IMAGE\tRECIPE\tID\tSIZE\tCREATED")
		for _, im := range list {
			fmt.Fprintf(tw, "%s\t%s\t%.19s\t%s\t%s\n", im.Ref, im.Recipe, im.ID, units.HumanSize(float64(im.Size)), im.Created.Format("2006-01-02 15:04:05"))
		}
		return tw.Flush()
	}
	return fmt.Errorf("images: unknown subcommand %q (build or ls)", args[0])
}
