package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func (a *app) pluginsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "Inspect plugins",
	}
	cmd.AddCommand(&cobra.Command{
		Use:     "list",
		Short:   "List built-in and installed plugins with their versions, protocol and components",
		Example: "  sluice plugins list\n  sluice plugins list --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h := host.New(host.Options{Builtins: builtins, PluginPath: host.SearchPath(os.Getenv(host.PluginPathEnv))})
			defer h.Close()
			type row struct {
				Name     string   `json:"name"`
				Version  string   `json:"version"`
				Protocol string   `json:"protocol"`
				Kind     string   `json:"kind"`
				Path     string   `json:"path,omitempty"`
				SHA256   string   `json:"sha256,omitempty"`
				Sources  []string `json:"sources"`
				Sinks    []string `json:"sinks"`
			}
			var rows []row
			add := func(i *plugin.Info, kind, path, sum string) {
				r := row{Name: i.Name, Version: i.Version, Protocol: fmt.Sprintf("%d.%d", plugin.ProtocolVersion, i.ProtocolMinor), Kind: kind, Path: path, SHA256: sum, Sources: []string{}, Sinks: []string{}}
				for _, c := range i.Sources {
					r.Sources = append(r.Sources, c.Name)
				}
				for _, c := range i.Sinks {
					r.Sinks = append(r.Sinks, c.Name)
				}
				rows = append(rows, r)
			}
			for _, b := range h.Builtins() {
				add(b.New().Info(), "built-in", "", "")
			}
			for _, e := range h.Externals() {
				if e.Info == nil {
					rows = append(rows, row{Name: e.Name, Kind: "installed (failed to start)", Path: e.Path, SHA256: e.SHA256})
					continue
				}
				add(e.Info, "installed", e.Path, e.SHA256)
			}
			if a.json {
				return writeJSON(a.stdout, rows)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tPROTOCOL\tKIND\tSOURCES\tSINKS")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%v\n", r.Name, r.Version, r.Protocol, r.Kind, r.Sources, r.Sinks)
			}
			return tw.Flush()
		},
	})
	return cmd
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
					plugin.Serve(b.New())
					return nil
				}
			}
			return configErr(fmt.Errorf("no built-in plugin %q", args[0]))
		},
	})
	return cmd
}
