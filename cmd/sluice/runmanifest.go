package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluice-ml/sluice/core/digestcache"
	"github.com/sluice-ml/sluice/core/run"
	"github.com/sluice-ml/sluice/sdk/bytesize"
)

// runFlags are the options of `sluice run` for scheduled, CI and
// distributed runs: run manifests, --skip-unchanged and --partition.
type runFlags struct {
	skipUnchanged bool
	partition     string
	manifest      bool
	fsync         bool
	keepCache     bool
	digestCache   bool
}

func (rf *runFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&rf.skipUnchanged, "skip-unchanged", false,
		"do nothing when the run manifests beside the outputs record this pipeline, these variables, plugins and inputs, and the outputs are as they were written")
	cmd.Flags().StringVar(&rf.partition, "partition", "",
		"run partition `INDEX/COUNT` of the work only (INDEX from 0, e.g. $JOB_COMPLETION_INDEX/8): its shards and whole sinks; sluice finalize completes the run")
	cmd.Flags().BoolVar(&rf.manifest, "run-manifest", true, "write NAME.sluice-run.json beside each sink's outputs")
	cmd.Flags().BoolVar(&rf.digestCache, "digest-cache", true,
		"take the SHA-256 of an input (or of the sluice and plugin binaries) the run manifest records from the user's digest cache when the file has the size and time it was hashed at, and add the files this run hashes to it (docs/operations.md)")
	cmd.Flags().BoolVar(&rf.fsync, "fsync", true,
		"sync every output before renaming it into place; false still never leaves a half-written file under an output's name when sluice is killed, but a crash of the machine may (for outputs that are uploaded or thrown away at once)")
	cmd.Flags().BoolVar(&rf.keepCache, "keep-cache", false,
		"leave each output in the page cache as it is written, for a next step that reads it at once (loading, testing or uploading the model); by default the pages each early sync made durable are dropped once the run has read them, so that a conversion does not push other processes' files out of memory")
}

func (rf *runFlags) parse() (*run.Partition, error) {
	if !rf.manifest && (rf.skipUnchanged || rf.partition != "") {
		return nil, configErr(errors.New("--skip-unchanged and --partition need the run manifests; drop --run-manifest=false"))
	}
	if rf.partition == "" {
		return nil, nil
	}
	p, err := run.ParsePartition(rf.partition)
	if err != nil {
		return nil, configErr(fmt.Errorf("--partition: %w", err))
	}
	return &p, nil
}

// runRecorded is `sluice run`: it may skip the run, may run one partition
// of it, and writes the run manifests.
func (a *app) runRecorded(ctx context.Context, path string, vf varFlags, rf runFlags) error {
	part, err := rf.parse()
	if err != nil {
		return err
	}
	h, arena, heap, err := a.newHost()
	if err != nil {
		return err
	}
	pr := &prepared{h: h, arena: arena, heap: heap, noFsync: !rf.fsync, keepCache: rf.keepCache}
	defer pr.close()
	if pr.p, err = a.load(path, vf, h); err != nil {
		return err
	}
	var pv *run.Provenance
	var store *digestcache.Cache
	if rf.manifest {
		known := run.DigestCache{}
		if rf.digestCache {
			store = a.loadDigestCache()
			addCached(known, store)
		}
		if pv, err = run.NewProvenance(pr.p, h, version, known); err != nil {
			return err
		}
	}
	if rf.skipUnchanged {
		reason, err := run.Unchanged(pr.p, pv, part)
		if err != nil {
			return err
		}
		if reason == "" {
			if a.json {
				return writeJSON(a.stdout, map[string]any{"skipped": true, "reason": "unchanged"})
			}
			if !a.quiet {
				fmt.Fprintln(a.stdout, "Nothing to do: the outputs are up to date with their inputs, pipeline, variables and plugins (run manifests checked).")
			}
			return nil
		}
		if !a.quiet && !a.json {
			fmt.Fprintf(a.stdout, "Running: %s.\n", reason)
		}
	}
	if pr.sess, err = run.Open(ctx, pr.p, h); err != nil {
		return a.reportStageError(pr.p, err)
	}
	if pr.pl, err = pr.sess.Plan(ctx); err != nil {
		return a.reportStageError(pr.p, err)
	}
	runPlan := pr.pl
	if part != nil {
		asg, err := run.Assign(pr.pl, part.Count)
		if err != nil {
			return a.reportStageError(pr.p, err)
		}
		runPlan = asg.Restrict(pr.pl, part.Index)
	}
	var rec *run.Recorder
	if pv != nil {
		// Input hashing stops with a failed run.
		hctx, cancel := context.WithCancel(ctx)
		defer cancel()
		cache := run.Cache(pr.p)
		addCached(cache, store)
		rec = run.StartRecording(hctx, pv, pr.pl, runPlan, part, cache)
		if !rf.fsync {
			rec.SkipFsync()
		}
	}
	res, err := a.runPlan(ctx, pr, runPlan)
	if err != nil {
		return err
	}
	var manifests []string
	if rec != nil {
		if manifests, err = rec.Finish(res); err != nil {
			return err
		}
		if store != nil {
			a.saveDigestCache(store, rec, pv)
		}
	}
	a.printResult(res, manifests, part)
	return nil
}

// loadDigestCache loads the user's digest cache. A cache that cannot be
// read is reported and replaced on save. Without a home directory (a
// service with neither $HOME nor $XDG_CACHE_HOME) there is no cache, and
// the run hashes its inputs without a word: the cache saves time, it is not
// a result.
func (a *app) loadDigestCache() *digestcache.Cache {
	path, err := digestcache.DefaultPath()
	if err != nil {
		return nil
	}
	store, err := digestcache.Load(path)
	if err != nil {
		a.warn(err)
	}
	return store
}

// addCached adds the entries of the user's digest cache (nil: none) to
// cache, where it has none of its own (the manifests beside the outputs
// come first).
func addCached(cache run.DigestCache, store *digestcache.Cache) {
	if store == nil {
		return
	}
	for p, e := range store.Files {
		if _, ok := cache[p]; !ok {
			cache[p] = run.FileRecord{Path: p, Size: e.Size, SHA256: e.SHA256, ModTime: e.ModTime}
		}
	}
}

// saveDigestCache adds the digests of the run's inputs, and of the sluice
// and plugin binaries it was recorded with, to the cache. The run has
// succeeded by then: a cache that cannot be written is reported, not an
// error.
func (a *app) saveDigestCache(store *digestcache.Cache, rec *run.Recorder, pv *run.Provenance) {
	inputs, err := rec.Inputs()
	if err != nil {
		return
	}
	binaries, err := pv.BinaryRecords()
	if err != nil {
		return
	}
	for _, r := range append(inputs, binaries...) {
		store.Record(r.Path, digestcache.Entry{Size: r.Size, ModTime: r.ModTime, SHA256: r.SHA256})
	}
	if err := store.Save(); err != nil {
		a.warn(fmt.Errorf("%w (--digest-cache=false runs without it)", err))
	}
}

// warn reports a problem that does not fail the command.
func (a *app) warn(err error) {
	fmt.Fprintf(a.stderr, "sluice: warning: %v\n", err)
}

// printResult reports what a run or a finalize wrote.
func (a *app) printResult(res *run.Result, manifests []string, part *run.Partition) {
	if a.json {
		out := resultJSON(res)
		out["run_manifests"] = manifests
		if part != nil {
			out["partition"] = part.String()
		}
		writeJSON(a.stdout, out)
		return
	}
	if a.quiet {
		return
	}
	for _, sa := range res.Artifacts {
		for _, art := range sa.Artifacts {
			fmt.Fprintf(a.stdout, "wrote %s (%s) [%s]\n", art.Path, bytesize.Human(art.Size), sa.Stage.Addr())
		}
	}
	for _, m := range manifests {
		fmt.Fprintf(a.stdout, "wrote %s (run manifest)\n", m)
	}
	if part != nil {
		fmt.Fprintf(a.stdout, "Partition %s done; when every partition is, run `sluice finalize` with the same pipeline and variables.\n", part)
	}
}
