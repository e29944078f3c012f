package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// buildVersion is what the binary knows of its own build: the module
// version (a tag when installed with go install module@version,
// "(devel)" when built in a checkout) and the VCS stamp go build adds
// (absent with -buildvcs=false).
type buildVersion struct {
	Module    string `json:"module"`
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

func readBuildVersion() buildVersion {
	v := buildVersion{Version: "(unknown)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Module, v.Version = bi.Main.Path, bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func (a *app) versionCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "this binary's module version, VCS revision and Go version",
		Long:  "version prints this binary's build; endpoint status shows each node's.",
		Args:  cobra.NoArgs,
	}
	o := outputFlag(cmd.Flags(), "table")
	cmd.RunE = func(*cobra.Command, []string) error {
		v := readBuildVersion()
		return o.print(a.stdout, v, func(w io.Writer) error {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "arbiter\t%s\n", v.Version)
			fmt.Fprintf(tw, "module\t%s\n", orDash(v.Module))
			rev := orDash(v.Revision)
			if v.Modified {
				rev += " (modified)"
			}
			fmt.Fprintf(tw, "revision\t%s\n", rev)
			fmt.Fprintf(tw, "built\t%s\n", orDash(v.Time))
			fmt.Fprintf(tw, "go\t%s %s\n", v.GoVersion, v.Platform)
			return tw.Flush()
		})
	}
	return cmd
}
