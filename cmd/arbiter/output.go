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

// outputFlagInto registers -o on fs into o's variable.
func outputFlagInto(fs *pflag.FlagSet, o output, def string) output {
	fs.StringVarP(o.format, "output", "o", def, "output format: json or table")
	return o
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

// writeTable renders any JSON-shaped value for a terminal, flat: no
// cell ever holds JSON. An array of objects, or an object holding one (a
// page: nodes, records, tasks), is a table with one row per record and a
// column per scalar field, nested objects flattened to dotted column names
// (conflict_key.target) and arrays of scalars joined with commas; arrays
// of objects inside a record are left out of its row. Any other object is
// FIELD VALUE rows, nested objects and arrays flattened with dotted names
// (catalog.0.work_item_id).
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

// flatRow is a record's scalar fields by dotted name: nested objects
// flattened, arrays of scalars kept (cell joins them), arrays holding
// objects left out.
func flatRow(prefix string, v any, out map[string]any) {
	m, ok := v.(map[string]any)
	if !ok {
		out[strings.TrimSuffix(prefix, ".")] = v
		return
	}
	for k, val := range m {
		switch x := val.(type) {
		case map[string]any:
			if len(x) > 0 {
				flatRow(prefix+k+".", x, out)
			}
		case []any:
			if scalars(x) {
				out[prefix+k] = x
			}
		default:
			out[prefix+k] = val
		}
	}
}

// scalars reports whether no element of a is an object or an array.
func scalars(a []any) bool {
	for _, e := range a {
		switch e.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

func rowsTable(w io.Writer, records []any) {
	rows := make([]map[string]any, len(records))
	var cols []string
	seen := map[string]bool{}
	for i, r := range records {
		rows[i] = map[string]any{}
		flatRow("", r, rows[i])
		keys := make([]string, 0, len(rows[i]))
		for k := range rows[i] {
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
	for _, m := range rows {
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
	slices.SortFunc(keys, byNameOrIndex)
	for _, k := range keys {
		switch x := d[k].(type) {
		case map[string]any:
			if len(x) > 0 {
				fieldsTable(w, prefix+k+".", x)
				continue
			}
		case []any:
			if !scalars(x) {
				// Each element under its index: catalog.0.work_item_id.
				byIndex := make(map[string]any, len(x))
				for i, e := range x {
					byIndex[fmt.Sprint(i)] = e
				}
				fieldsTable(w, prefix+k+".", byIndex)
				continue
			}
		}
		fmt.Fprintf(w, "%s\t%s\n", strings.ToUpper(prefix+k), cell(d[k]))
	}
}

// byNameOrIndex orders field names, and array indexes by number (2
// before 10).
func byNameOrIndex(a, b string) int {
	if len(a) != len(b) && digits(a) && digits(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// cell is one scalar value (or an array of them) as a table shows it.
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
	case []any:
		if len(x) == 0 {
			return "-"
		}
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = cell(e)
		}
		return strings.Join(parts, ",")
	case map[string]any:
		if len(x) == 0 {
			return "-"
		}
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// idFirst: identifying columns (id, seq, *_id) lead a table.
func idFirst(k string) bool {
	return k == "id" || k == "seq" || strings.HasSuffix(k, "_id")
}
