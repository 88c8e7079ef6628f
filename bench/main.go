// Command bench generates synthetic checkpoints and times whole sluice
// processes against the limits they are bound by (cp, a page-cache read),
// reporting ratios from the same run. See docs/performance.md.
//
//	go run ./bench gen -size 1GiB /tmp/ckpt          # a llama-shaped bf16 HF directory
//	go run ./bench passthrough -size 1GiB            # safetensors → safetensors, in and out of process, vs cp
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = genCommand(os.Args[2:])
	case "passthrough":
		err = passthroughCommand(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bench gen|passthrough [flags]")
	flag.PrintDefaults()
	os.Exit(2)
}
