package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// domainCommand is a domain's `arbiter <name>` command. A domain that
// builds a cobra command gets the cluster flags and -o (default json, the
// API's answer, as these commands printed before) added to it; one that
// still parses its own arguments (domain.CLI.Run) is passed every
// argument untouched.
func (a *app) domainCommand(c *domain.CLI) *cobra.Command {
	if c.Command != nil {
		o := output{format: new(string)}
		cmd := c.Command(a.domainEnv(o))
		cmd.Use, cmd.Short = c.Name+trimName(cmd.Use), c.Summary
		a.connFlags(cmd.PersistentFlags())
		o = outputFlagInto(cmd.PersistentFlags(), o, "json")
		return cmd
	}
	return &cobra.Command{
		Use:                c.Name + " <command> [flags]",
		Short:              c.Summary,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			env := a.domainEnv(output{format: new(string)})
			if len(args) == 0 || isHelp(args[0]) {
				// The command's usage, on standard output: it prints it
				// when called without a command.
				env.Stderr = a.stdout
				_ = c.Run(env, nil)
				return nil
			}
			if slices.ContainsFunc(args, isHelp) {
				env.Stderr = a.stdout
				if err := c.Run(env, args); err != nil && !errors.Is(err, flag.ErrHelp) {
					return err
				}
				return nil
			}
			format, args, err := takeOutput(args)
			if err != nil {
				return err
			}
			o := output{format: &format}
			if err := o.check(); err != nil {
				return err
			}
			// The command prints JSON; for -o table it is printed again
			// as a table.
			var buf bytes.Buffer
			if !o.json() {
				env.Stdout = &buf
			}
			err = c.Run(env, args)
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			if !o.json() {
				if perr := reprintTable(a.stdout, buf.Bytes()); perr != nil && err == nil {
					err = perr
				}
			}
			return err
		},
	}
}

// takeOutput removes -o/--output FORMAT from the arguments of a command
// that parses its own flags (and prints JSON), so that every command
// takes -o alike.
func takeOutput(args []string) (string, []string, error) {
	format := "json"
	var rest []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			return format, append(rest, args[i:]...), nil
		case arg == "-o" || arg == "--output" || arg == "-output":
			if i+1 == len(args) {
				return "", nil, usageErrorf("%s needs json or table", arg)
			}
			format = args[i+1]
			i++
		case strings.HasPrefix(arg, "-o=") || strings.HasPrefix(arg, "--output=") || strings.HasPrefix(arg, "-output="):
			_, format, _ = strings.Cut(arg, "=")
		default:
			rest = append(rest, arg)
		}
	}
	return format, rest, nil
}

// reprintTable prints each JSON value in raw as a table (anything else
// as it is).
func reprintTable(w io.Writer, raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			return nil
		} else if err != nil {
			_, werr := w.Write(raw)
			return werr
		}
		if err := writeTable(w, v); err != nil {
			return err
		}
	}
}

// trimName is what follows the name in a command's Use.
func trimName(use string) string {
	for i, r := range use {
		if r == ' ' {
			return use[i:]
		}
	}
	return ""
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

// outputFlagInto registers -o on fs into o's variable (which the
// domain's env already prints with).
func outputFlagInto(fs *pflag.FlagSet, o output, def string) output {
	fs.StringVarP(o.format, "output", "o", def, "output format: json or table")
	return o
}

// goConnectFlags is domain.CLIEnv.Connect for domains that parse their
// own flags: the cluster flags on a flag.FlagSet, with the same
// environment defaults.
func (a *app) goConnectFlags(fs *flag.FlagSet) func() (domain.Conn, error) {
	fs.StringVar(&a.addr, "addr", "", "comma-separated API URLs of the cluster's nodes (default $ARBITER_ADDR, else "+defaultAddr+")")
	fs.StringVar(&a.token, "token", "", "bearer token of a principal (default $ARBITER_TOKEN)")
	fs.StringVar(&a.tokenFile, "token-file", "", "file holding the bearer token (default $ARBITER_TOKEN_FILE)")
	fs.StringVar(&a.ca, "ca", "", "PEM file of the CA that signed the nodes' certificates (default $ARBITER_CACERT)")
	fs.StringVar(&a.cert, "cert", "", "client certificate (PEM) naming a principal (default $ARBITER_CERT)")
	fs.StringVar(&a.key, "key", "", "private key (PEM) of --cert (default $ARBITER_KEY)")
	fs.DurationVar(&a.timeout, "timeout", 30*time.Second, "how long one call may take")
	return func() (domain.Conn, error) {
		r, err := a.remote()
		if err != nil {
			return nil, err
		}
		return r, nil
	}
}
