package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/arbiterhq/arbiter/client"
	"github.com/spf13/cobra"
)

func (a *app) whoamiCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "the principal your credentials name, its tenants, roles and owner digest",
		Long: `whoami asks the cluster who the credentials given (--token, --cert/--key, or
none) name: GET /v1/auth/whoami. owner_digest is what capacity's owner_digest
must be and what an empty owner_ref becomes; in open mode every caller is
trusted and names owners itself.`,
		Args: cobra.NoArgs,
	}
	a.connFlags(cmd.Flags())
	o := outputFlag(cmd.Flags(), "table")
	cmd.RunE = func(*cobra.Command, []string) error {
		if err := o.check(); err != nil {
			return err
		}
		c, err := a.coreClient()
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, cancel := a.context()
		defer cancel()
		w, err := c.Cluster().Whoami(ctx)
		if err != nil {
			return err
		}
		return o.print(a.stdout, w, func(out io.Writer) error { return whoamiTable(out, w) })
	}
	return cmd
}

func whoamiTable(out io.Writer, w *client.Whoami) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	principal := w.Principal
	if w.Trusted && principal == "" {
		principal = "(trusted)"
	}
	fmt.Fprintf(tw, "PRINCIPAL\t%s\n", principal)
	fmt.Fprintf(tw, "CREDENTIAL\t%s\n", w.Credential)
	fmt.Fprintf(tw, "AUTH MODE\t%s\n", w.AuthMode)
	fmt.Fprintf(tw, "TENANTS\t%s\n", orDash(strings.Join(w.Tenants, ",")))
	fmt.Fprintf(tw, "ROLES\t%s\n", orDash(strings.Join(w.Roles, ",")))
	fmt.Fprintf(tw, "OWNER DIGEST\t%s\n", orDash(w.OwnerDigest))
	fmt.Fprintf(tw, "TRUSTED\t%v\n", w.Trusted)
	return tw.Flush()
}
