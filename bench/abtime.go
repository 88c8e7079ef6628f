package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// abCommand times several commands against each other, interleaved, and
// prints medians: `bench ab -runs 5 -- cmd1 args :: cmd2 args`. A command
// may start with `clean=DIR` to empty DIR before each of its runs.
func abCommand(args []string) error {
	fs := flag.NewFlagSet("ab", flag.ExitOnError)
	runs := fs.Int("runs", 5, "runs per command (after one warm-up run)")
	quiet := fs.Float64("quiet", 0.3, "start each run once other processes use fewer cores than this…")
	maxWait := fs.Duration("max-wait", 5*time.Second, "…or after waiting this long")
	fs.Parse(args)
	var cmds [][]string
	cur := []string{}
	for _, a := range fs.Args() {
		if a == "::" {
			cmds = append(cmds, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, a)
	}
	cmds = append(cmds, cur)
	res := make([][]measurement, len(cmds))
	for r := 0; r <= *runs; r++ {
		for i, c := range cmds {
			argv := c
			if len(argv) > 0 && strings.HasPrefix(argv[0], "clean=") {
				dir := strings.TrimPrefix(argv[0], "clean=")
				os.RemoveAll(dir)
				os.MkdirAll(dir, 0o755)
				argv = argv[1:]
			}
			if len(argv) == 0 {
				return fmt.Errorf("command %d is empty", i+1)
			}
			waitQuiet(*quiet, *maxWait)
			m, _, err := runProcess(argv, false)
			if err != nil {
				return err
			}
			if r > 0 {
				res[i] = append(res[i], m)
			}
		}
	}
	fmt.Println("| command | wall, median [min–max] | CPU s | waiting for a core, s | cores wanted | peak RSS | peak PSS, tree | other load |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for i, c := range cmds {
		s := summarize(res[i])
		fmt.Printf("| `%s` | %.3f s [%.3f–%.3f] | %.2f | %.2f | %.2f | %s | %s | %.2f |\n", strings.Join(c, " "), s.wall.Seconds(), s.minWall.Seconds(), s.maxWall.Seconds(),
			s.cpu.Seconds(), s.waited.Seconds(), (s.cpu+s.waited).Seconds()/s.wall.Seconds(), mib(s.selfHWM), mib(s.treePSS), s.foreign)
	}
	return nil
}
