package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func passthroughCommand(args []string) error {
	fs := flag.NewFlagSet("passthrough", flag.ExitOnError)
	size := fs.String("size", "1GiB", "checkpoint size")
	dir := fs.String("dir", "", "work directory (default: a temporary one)")
	runs := fs.Int("runs", 3, "runs per scenario (the median is reported)")
	mem := fs.String("max-memory", "256MiB", "sluice --max-memory")
	fs.Parse(args)
	work := *dir
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "sluice-bench-*"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	in := filepath.Join(work, "in")
	if _, err := os.Stat(filepath.Join(in, "model.safetensors")); err != nil {
		if err := genCommand([]string{"-size", *size, in}); err != nil {
			return err
		}
	}
	sluice, err := buildSluice(work)
	if err != nil {
		return err
	}
	src := filepath.Join(in, "model.safetensors")
	fi, _ := os.Stat(src)
	n := fi.Size()
	out := filepath.Join(work, "out")
	pipe := filepath.Join(work, "passthrough.hcl")
	os.WriteFile(pipe, []byte(fmt.Sprintf("source \"safetensors\" \"in\" {\n  path = %q\n}\nsink \"safetensors\" \"out\" {\n  input = source.in\n  path  = %q\n  hf_files = false\n}\n", src, filepath.Join(out, "model.safetensors"))), 0o644)

	scenarios := []scenario{
		{name: "cp", cmd: []string{"cp", src, filepath.Join(out, "cp.safetensors")}},
		{name: "read (page cache)", cmd: []string{"cat", src}, discard: true},
		{name: "sluice out of process", cmd: []string{sluice, "run", pipe, "--quiet", "--max-memory", *mem}},
		{name: "sluice --in-process", cmd: []string{sluice, "run", pipe, "--quiet", "--in-process", "--max-memory", *mem}},
	}
	// Interleave the scenarios run by run so machine noise hits all alike.
	results := make([][]measurement, len(scenarios))
	for r := 0; r < *runs; r++ {
		for i, s := range scenarios {
			os.RemoveAll(out)
			os.MkdirAll(out, 0o755)
			m, err := s.run()
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			results[i] = append(results[i], m)
		}
	}
	fmt.Printf("passthrough of %.2f GiB (safetensors → safetensors), median of %d interleaved runs\n", float64(n)/(1<<30), *runs)
	report(scenarios, results, n, map[string]string{
		"sluice out of process": "sluice --in-process",
	})
	return nil
}
