package main

import (
	"fmt"
	"io"
	"time"
)

// progress counts the bytes of a backup as they move and, when stderr is
// a terminal, shows the count there, rewriting one line at most five
// times a second. Elsewhere (a pipe, a file, a test) it writes nothing,
// so scripts and logs see only the result.
type progress struct {
	w     io.Writer // nil: silent
	verb  string
	total int64 // 0: unknown
	n     int64
	last  time.Time
	begin time.Time
}

func (a *app) progress(verb string, total int64) *progress {
	p := &progress{verb: verb, total: total, begin: time.Now()}
	if a.isTerminal() {
		p.w = a.stderr
	}
	return p
}

func (p *progress) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if p.w != nil && time.Since(p.last) >= 200*time.Millisecond {
		p.last = time.Now()
		p.show()
	}
	return len(b), nil
}

func (p *progress) show() {
	if p.total > 0 {
		fmt.Fprintf(p.w, "\r%s: %s of %s (%d%%)  ", p.verb, bytesText(p.n), bytesText(p.total), p.n*100/p.total)
		return
	}
	fmt.Fprintf(p.w, "\r%s: %s  ", p.verb, bytesText(p.n))
}

// done shows the final count and ends the line.
func (p *progress) done() {
	if p.w == nil {
		return
	}
	p.show()
	fmt.Fprintf(p.w, "in %v\n", time.Since(p.begin).Round(time.Millisecond))
}
