package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
)

// output is a command's -o flag. Every command that prints a result
// takes it: json is the API's answer, indented; table is for people.
// Commands that print API answers for scripts (the domain commands)
// default to json, the others to table.
type output struct{ format *string }

// outputFlag registers -o on fs with default def.
// The core commands also take --json, the deprecated alias of -o json
// (a domain command's --json is its request body instead).
func outputFlag(fs *pflag.FlagSet, def string) output {
	o := outputFlagInto(fs, output{format: new(string)}, def)
	o.jsonAlias(fs)
	return o
}

// jsonAlias registers the --json flag of earlier releases as a
// deprecated alias of -o json.
func (o output) jsonAlias(fs *pflag.FlagSet) {
	fs.Var(jsonAlias{o}, "json", "same as -o json")
	fs.Lookup("json").NoOptDefVal = "true"
	deprecate(fs, "json", "use -o json")
}

type jsonAlias struct{ o output }

func (j jsonAlias) String() string { return "false" }
func (j jsonAlias) Type() string   { return "bool" }
func (j jsonAlias) Set(s string) error {
	if s == "true" {
		*j.o.format = "json"
	}
	return nil
}

// check refuses a format other than json and table, as a usage error.
func (o output) check() error {
	switch *o.format {
	case "json", "table":
		return nil
	}
	return usageErrorf("-o %q: want json or table", *o.format)
}

func (o output) json() bool { return *o.format == "json" }

// print writes v as -o asks: JSON, or table(w) when given, else a table
// made from v's JSON form (see writeTable).
func (o output) print(w io.Writer, v any, table func(w io.Writer) error) error {
	if err := o.check(); err != nil {
		return err
	}
	if o.json() {
		return writeJSON(w, v)
	}
	if table != nil {
		return table(w)
	}
	return writeTable(w, v)
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeTable renders any JSON-shaped value for a terminal. An array of
// objects, or an object holding one (a page: nodes, records, leases), is
// a table with a column per field; any other object is FIELD VALUE rows,
// nested objects flattened with dotted names. Values that are neither
// strings nor numbers print as compact JSON.
func writeTable(w io.Writer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	switch d := doc.(type) {
	case []any:
		rowsTable(tw, d)
	case map[string]any:
		if key, rows, ok := onlyRows(d); ok {
			rowsTable(tw, rows)
			rest := without(d, key)
			if len(rest) > 0 {
				_ = tw.Flush()
				fmt.Fprintln(tw)
				fieldsTable(tw, "", rest)
			}
		} else {
			fieldsTable(tw, "", d)
		}
	default:
		fmt.Fprintln(tw, cell(d))
	}
	return tw.Flush()
}

// onlyRows finds the one field of d that is an array of objects.
func onlyRows(d map[string]any) (string, []any, bool) {
	found := ""
	for k, v := range d {
		if a, ok := v.([]any); ok && len(a) > 0 {
			if _, obj := a[0].(map[string]any); obj {
				if found != "" {
					return "", nil, false
				}
				found = k
			}
		}
	}
	if found == "" {
		return "", nil, false
	}
	return found, d[found].([]any), true
}

// without is d without key.
func without(d map[string]any, key string) map[string]any {
	out := map[string]any{}
	for k, v := range d {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func rowsTable(w io.Writer, rows []any) {
	var cols []string
	seen := map[string]bool{}
	for _, r := range rows {
		m, _ := r.(map[string]any)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if ki, kj := idFirst(keys[i]), idFirst(keys[j]); ki != kj {
				return ki
			}
			return keys[i] < keys[j]
		})
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				cols = append(cols, k)
			}
		}
	}
	head := make([]string, len(cols))
	for i, c := range cols {
		head[i] = strings.ToUpper(c)
	}
	fmt.Fprintln(w, strings.Join(head, "\t"))
	for _, r := range rows {
		m, _ := r.(map[string]any)
		cells := make([]string, len(cols))
		for i, c := range cols {
			if v, ok := m[c]; ok {
				cells[i] = cell(v)
			}
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
}

func fieldsTable(w io.Writer, prefix string, d map[string]any) {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if m, ok := d[k].(map[string]any); ok && len(m) > 0 {
			fieldsTable(w, prefix+k+".", m)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\n", strings.ToUpper(prefix+k), cell(d[k]))
	}
}

// cell is one value as a table shows it.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		return strings.ReplaceAll(x, "\n", " ")
	case json.Number:
		return x.String()
	case bool:
		return fmt.Sprint(x)
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// idFirst: identifying columns (id, seq, *_id) lead a table.
func idFirst(k string) bool {
	return k == "id" || k == "seq" || strings.HasSuffix(k, "_id")
}
