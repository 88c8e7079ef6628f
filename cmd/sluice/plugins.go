package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/internal/hugeheap"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func (a *app) pluginsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "Inspect plugins",
	}
	var lockDir string
	list := &cobra.Command{
		Use:   "list",
		Short: "List built-in and installed plugins with their versions, protocol and components",
		Long: `list shows every plugin sluice can use: the ones built into this binary and
third-party binaries named sluice-plugin-NAME found on SLUICE_PLUGIN_PATH
(each started once to ask what it serves; a binary that fails to start is
listed as such). For each: its version, the protocol version it speaks
(major.minor of sluice.plugin.v1), the source and sink types it serves and
the file name suffixes they usually read and write (a hint only: sources
detect files by content). --json adds each component's description.
Installed plugins are checked against the lock file of the pipeline in
--pipeline DIR (default: the current directory), when there is one.`,
		Example: "  sluice plugins list\n  sluice plugins list --json\n  SLUICE_PLUGIN_PATH=~/.sluice/plugins sluice plugins list",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h := host.New(host.Options{Builtins: builtins, PluginPath: host.SearchPath(os.Getenv(host.PluginPathEnv))})
			defer h.Close()
			var rows []pluginRow
			for _, b := range h.Builtins() {
				rows = append(rows, newPluginRow(b.New().Info(), "built-in", "", ""))
			}
			for _, e := range h.Externals() {
				if e.Info == nil {
					rows = append(rows, pluginRow{Name: e.Name, Kind: "installed (failed to start)", Path: e.Path, SHA256: e.SHA256, Sources: []pluginComponent{}, Sinks: []pluginComponent{}})
					continue
				}
				rows = append(rows, newPluginRow(e.Info, "installed", e.Path, e.SHA256))
			}
			for i := range rows {
				if rows[i].Path != "" {
					rows[i].Lock = lockStatus(lockDir, rows[i].Name, rows[i].SHA256)
				}
			}
			if a.json {
				return writeJSON(a.stdout, rows)
			}
			tw := newTable(a.stdout)
			fmt.Fprintln(tw, "NAME\tVERSION\tPROTOCOL\tKIND\tSOURCES\tSINKS\tFILES")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, dash(r.Version), dash(r.Protocol), r.Kind, componentNames(r.Sources), componentNames(r.Sinks), strings.Join(r.extensions(), " "))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, r := range rows {
				if r.Path != "" {
					lock := ""
					if r.Lock != "" {
						lock = "; " + r.Lock
					}
					fmt.Fprintf(a.stdout, "%s: %s (sha256 %s%s)\n", r.Name, r.Path, r.SHA256, lock)
				}
			}
			return nil
		},
	}
	list.Flags().StringVar(&lockDir, "pipeline", ".", "directory whose lock file (.sluice.lock.hcl) installed plugins are checked against")
	cmd.AddCommand(list)
	return cmd
}

// pluginRow is one plugin in `plugins list`.
type pluginRow struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Protocol string `json:"protocol"`
	Kind     string `json:"kind"`
	Path     string `json:"path,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	// Lock is the plugin's state in the lock file: "locked 1.2.0", "not
	// locked", a mismatch; empty without a lock file.
	Lock    string            `json:"lock,omitempty"`
	Sources []pluginComponent `json:"sources"`
	Sinks   []pluginComponent `json:"sinks"`
}

// pluginComponent is one source or sink type of a plugin.
type pluginComponent struct {
	Name       string   `json:"name"`
	Doc        string   `json:"doc"`
	Extensions []string `json:"extensions"`
}

func newPluginRow(i *plugin.Info, kind, path, sum string) pluginRow {
	r := pluginRow{Name: i.Name, Version: i.Version, Protocol: fmt.Sprintf("%d.%d", plugin.ProtocolVersion, i.ProtocolMinor), Kind: kind, Path: path, SHA256: sum, Sources: []pluginComponent{}, Sinks: []pluginComponent{}}
	conv := func(c plugin.ComponentInfo) pluginComponent {
		ext := c.Extensions
		if ext == nil {
			ext = []string{}
		}
		return pluginComponent{Name: c.Name, Doc: c.Doc, Extensions: ext}
	}
	for _, c := range i.Sources {
		r.Sources = append(r.Sources, conv(c))
	}
	for _, c := range i.Sinks {
		r.Sinks = append(r.Sinks, conv(c))
	}
	return r
}

func (r pluginRow) extensions() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range append(append([]pluginComponent(nil), r.Sources...), r.Sinks...) {
		for _, e := range c.Extensions {
			if !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
		}
	}
	return out
}

func componentNames(cs []pluginComponent) string {
	if len(cs) == 0 {
		return "-"
	}
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ",")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// pluginServeCommand is the hidden command built-in plugins run as.
func (a *app) pluginServeCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "plugin", Hidden: true}
	cmd.AddCommand(&cobra.Command{
		Use:    "serve NAME",
		Short:  "Serve a built-in plugin (started by sluice itself)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, b := range builtins {
				if b.Name == args[0] {
					_ = hugeheap.Reserve(heapReserve)
					plugin.Serve(b.New())
					return nil
				}
			}
			return configErr(fmt.Errorf("no built-in plugin %q", args[0]))
		},
	})
	return cmd
}
