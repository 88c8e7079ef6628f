// Command mksample writes Sluice's sample checkpoint:
//
//	go run ./internal/sample/mksample testdata/sample
package main

import (
	"fmt"
	"os"

	"github.com/sluice-ml/sluice/internal/sample"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mksample DIR")
		os.Exit(2)
	}
	if err := sample.Write(os.Args[1], sample.Default); err != nil {
		fmt.Fprintln(os.Stderr, "mksample:", err)
		os.Exit(1)
	}
}
