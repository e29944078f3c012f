package client

import (
	"net/url"
	"strconv"
)

// Consistency is how a read is served: Linearizable (the default: as of
// now, through the leader) or Stale (the answering node's own state,
// possibly behind; cheaper).
type Consistency string

// The consistencies a read may ask for.
const (
	Linearizable Consistency = ""
	Stale        Consistency = "stale"
)

// PageQuery asks for one page of a list: at most Limit entries (0: the
// server's default) after the cursor After ("": the first page).
type PageQuery struct {
	After       string
	Limit       int
	Consistency Consistency
}

// params builds query parameters from name, value pairs, leaving out
// empty values (absent parameters keep the server's defaults).
func params(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

// num is n as a parameter value, "" for 0 (the server's default).
func num(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// flag is b as a parameter value, "" for false.
func flag(b bool) string {
	if !b {
		return ""
	}
	return "true"
}

// page is the parameters of p, and any others given.
func (p PageQuery) params(kv ...string) url.Values {
	return params(append(kv, "after", p.After, "limit", num(p.Limit), "consistency", string(p.Consistency))...)
}
