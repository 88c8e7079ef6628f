package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluice-ml/sluice/core/run"
)

func (a *app) finalizeCommand() *cobra.Command {
	var vf varFlags
	cmd := &cobra.Command{
		Use:   "finalize PIPELINE",
		Short: "Complete a partitioned run: write index files, signatures and run manifests",
		Long: `finalize completes a run that ` + "`sluice run --partition INDEX/COUNT`" + ` split between
machines (or processes). It plans the pipeline again (headers only), with the
variables the partitions had, reads the run manifest every partition wrote
beside every sink, and checks that all of them ran this pipeline, with these
variables, this sluice and these plugins, over the same inputs, and that
their outputs are in place. Then every sink whose shards were divided writes
the files that describe the whole set (a safetensors index, side files such as
config.json; a GGUF split set has none), a sign stage signs them, and each
sink gets its run manifest, listing every output; the partition manifests are
removed. The files are those a run on one machine writes, byte for byte.

The partitions' outputs must be visible here: run finalize where they all
write, e.g. on a shared or object-storage file system.`,
		Example: `  # one partition per machine (Kubernetes: JOB_COMPLETION_INDEX), then:
  sluice run pipelines/release --partition 0/4 -var out_dir=/mnt/models/out
  …
  sluice finalize pipelines/release -var out_dir=/mnt/models/out`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			pr, err := a.prepare(ctx, args[0], vf)
			if err != nil {
				return err
			}
			defer pr.close()
			pv, err := run.NewProvenance(pr.p, pr.h, version, nil)
			if err != nil {
				return err
			}
			fin, err := run.Finalize(ctx, pr.pl, pv)
			if errors.Is(err, run.ErrAlreadyFinalized) {
				if a.json {
					return writeJSON(a.stdout, map[string]any{"finalized": true, "already": true})
				}
				if !a.quiet {
					fmt.Fprintln(a.stdout, "Nothing to do: the run was already finalized (no partition manifest is left).")
				}
				return nil
			}
			if err != nil {
				return a.reportStageError(pr.p, err)
			}
			a.printResult(fin.Result, fin.Manifests, nil)
			if !a.quiet && !a.json {
				fmt.Fprintf(a.stdout, "Finalized a run of %d partitions.\n", fin.Partitions)
			}
			return nil
		},
	}
	vf.add(cmd)
	return cmd
}
