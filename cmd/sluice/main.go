// Command sluice converts machine-learning checkpoints through declarative
// pipelines. See docs/cli.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/internal/hugeheap"
	"github.com/sluice-ml/sluice/internal/standby"
	_ "github.com/sluice-ml/sluice/internal/warmstart" // the binary's pages mapped at once as it starts, plugins too
	"github.com/sluice-ml/sluice/sdk/bytesize"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// app holds the global flags.
type app struct {
	inProcess bool
	maxMemory string
	workers   int
	json      bool
	quiet     bool
	// pluginTimeout stops a plugin that makes no progress (0: never).
	pluginTimeout time.Duration
	// cpuProfile names the file a CPU profile of this process goes to;
	// stopProfile ends it.
	cpuProfile  string
	stopProfile func() error
	// secrets are the values the output redactors hide.
	secrets *secretSet
	stdout  io.Writer
	stderr  io.Writer
}

func main() {
	os.Exit(runMain(awaitIfStandby(os.Args[1:]), os.Stdout, os.Stderr))
}

// awaitIfStandby returns args, or, in a process a host started ahead
// (internal/standby), initialised and now waiting, the command line the
// host sends when it needs a plugin served. Such a process exits when its
// host ends without needing it.
func awaitIfStandby(args []string) []string {
	if !standby.IsChild(args) {
		return args
	}
	// Plugin processes leave Ctrl-C to their host (go-plugin's Serve
	// ignores SIGINT); so does a process waiting to be one.
	signal.Ignore(os.Interrupt)
	args, err := standby.Await()
	signal.Reset(os.Interrupt)
	if errors.Is(err, standby.ErrNotNeeded) {
		os.Exit(exitOK)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice plugin standby:", err)
		os.Exit(exitInternal)
	}
	return args
}

func runMain(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Everything printed goes through the redactors: no sensitive value a
	// plugin or a library echoes reaches the terminal or a log.
	secrets := &secretSet{}
	outR, errR := newRedactor(stdout, secrets), newRedactor(stderr, secrets)
	defer outR.Flush()
	defer errR.Flush()
	stdout, stderr = outR, errR
	a := &app{stdout: stdout, stderr: stderr, secrets: secrets}
	root := a.rootCommand()
	root.SetArgs(terraformFlags(args))
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if a.stopProfile != nil {
		if perr := a.stopProfile(); perr != nil && err == nil {
			err = perr
		}
	}
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	if ctx.Err() != nil {
		code = exitInterrupted
	}
	var ee *exitError
	if !(errors.As(err, &ee) && ee.reported) {
		fmt.Fprintln(stderr, "Error:", oneLine(err))
		if hint := hintFor(err); hint != "" {
			fmt.Fprintln(stderr, "Hint:", hint)
		}
	}
	if code == exitInterrupted {
		fmt.Fprintln(stderr, "Interrupted: every output was aborted; nothing was left under an output's name.")
	}
	return code
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "sluice",
		Short: "Convert machine-learning checkpoints through declarative pipelines",
		Long: `Sluice converts model checkpoints (safetensors, GGUF, apsim, APR, …) through
pipelines written in HCL: sources read checkpoints, transforms quantize, cast,
rename or shard them, and sinks write them. Every format is a plugin process.`,
		Example: `  sluice run pipelines/quickstart -var model_dir=testdata/sample
  sluice plan pipeline.hcl
  sluice convert model.safetensors model.gguf --dtype q8_0
  sluice info model.gguf`,
		SilenceUsage: true,
		// Keys given on the command line join the values the output
		// redactors hide.
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			a.noteFlagSecrets(cmd)
			return a.startProfile()
		},
		SilenceErrors: true,
		Version:       version,
	}
	pf := root.PersistentFlags()
	pf.BoolVar(&a.inProcess, "in-process", false, "run plugins inside this process (for profiling and comparison)")
	pf.StringVar(&a.maxMemory, "max-memory", "256MiB", "memory budget for tensor data in flight")
	pf.IntVar(&a.workers, "workers", 0, "goroutines applying ops at once (default: every core)")
	pf.BoolVar(&a.json, "json", false, "print machine-readable JSON")
	pf.BoolVarP(&a.quiet, "quiet", "q", false, "print nothing but errors")
	pf.DurationVar(&a.pluginTimeout, "plugin-timeout", plugin.DefaultTimeout, "stop a plugin that makes no progress for this long (0: wait forever)")
	pf.StringVar(&a.cpuProfile, "cpuprofile", "", "write a CPU profile of the sluice process to this file (go tool pprof reads it; with --in-process it covers the plugins too)")
	root.AddCommand(
		a.runCommand(), a.finalizeCommand(), a.planCommand(), a.validateCommand(),
		a.convertCommand(), a.infoCommand(), a.verifyCommand(), a.diffCommand(),
		a.tokenizeCommand(), a.templateCommand(), a.fmtCommand(),
		a.withInstall(a.pluginsCommand()), a.pluginServeCommand(),
	)
	return root
}

// budget splits --max-memory into the shared arena and the heap budget for
// whole-tensor ops: three quarters arena, in 8 MiB slots, at least 8 slots.
func (a *app) budget() (slots int, heap uint64, err error) {
	n, err := bytesize.Parse(a.maxMemory)
	if err != nil {
		return 0, 0, configErr(fmt.Errorf("--max-memory: %w", err))
	}
	slots = int(n * 3 / 4 / plugin.DefaultSlotSize)
	if slots < 8 {
		return 0, 0, configErr(fmt.Errorf("--max-memory %s is too small: the arena needs at least %s", a.maxMemory, bytesize.Human(8*plugin.DefaultSlotSize*4/3)))
	}
	heap = n - uint64(slots)*plugin.DefaultSlotSize
	return slots, heap, nil
}

// heapReserve is how much of the heap a command that plans or runs a
// pipeline, and a built-in plugin process, back with huge pages as they
// start (internal/hugeheap): about what sluice and each plugin allocate for
// a model of 20,000 tensors.
const heapReserve = 64 << 20

// newHost creates the arena and the plugin host.
func (a *app) newHost() (*host.Host, *plugin.Arena, uint64, error) {
	_ = hugeheap.Reserve(heapReserve) // an old kernel's refusal changes nothing
	slots, heap, err := a.budget()
	if err != nil {
		return nil, nil, 0, err
	}
	arena, err := plugin.NewArena(slots, plugin.DefaultSlotSize)
	if err != nil {
		return nil, nil, 0, err
	}
	timeout := a.pluginTimeout
	if timeout == 0 {
		timeout = -1 // the flag's 0 means no timeout
	}
	h := host.New(host.Options{
		Builtins:   builtins,
		InProcess:  a.inProcess,
		Arena:      arena,
		PluginPath: host.SearchPath(os.Getenv(host.PluginPathEnv)),
		Ahead:      aheadProcesses{},
		Timeout:    timeout,
	})
	return h, arena, heap, nil
}

func (a *app) workerCount() int {
	if a.workers > 0 {
		return a.workers
	}
	return runtime.GOMAXPROCS(0)
}

// terraformFlags accepts the single-dash spellings Terraform and Packer users
// type (-var, -var-file, and fmt's -check, -write, -list, -diff, -recursive)
// for the flags cobra spells with two dashes.
func terraformFlags(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		for _, f := range []string{"-var", "-var-file", "-check", "-write", "-list", "-diff", "-recursive"} {
			if a == f || strings.HasPrefix(a, f+"=") {
				a = "-" + a
				break
			}
		}
		out[i] = a
	}
	return out
}
