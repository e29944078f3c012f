package extension

import (
	"strings"
	"unicode"
)

// Identifiers are the versions of the identifier rules a record is read
// under (see the package doc). A reader that must give the answer an
// older release gave (Apply, replaying a log) names the version;
// everything else uses CurrentIdentifiers.
type Identifiers uint8

const (
	// IdentifiersV1: bounded UTF-8 without control characters, neither
	// an absolute or home path nor a URL with user information.
	IdentifiersV1 Identifiers = 1
	// IdentifiersV2 adds the sensitive-value classes (issue 40): no
	// path-like, URL-with-scheme, shell-like or token-like value.
	IdentifiersV2 Identifiers = 2
	// CurrentIdentifiers are what Parse, Seal and Identifier apply.
	CurrentIdentifiers = IdentifiersV2
)

// The classes of sensitive values IdentifiersV2 refuses, in detail.class.
const (
	ClassPath  = "path"
	ClassURL   = "url"
	ClassShell = "shell"
	ClassToken = "token"
)

// Identifier checks one identifier of the record under the current
// rules: Opaque, and none of the sensitive-value classes.
func Identifier(field, s string) error { return identifier(field, s, CurrentIdentifiers) }

func identifier(field, s string, r Identifiers) error {
	if r < IdentifiersV2 {
		return Opaque(field, s)
	}
	if err := bounded(field, s); err != nil {
		return err
	}
	// The classes take in everything IdentifiersV1 refused (absolute and home
	// paths, URLs with user information), so each refusal names one.
	if class, why := sensitive(s); class != "" {
		e := invalid(field, "%s; credentials, paths, command bodies and raw payloads never enter the record", why)
		e.Detail["class"] = class
		return e
	}
	return nil
}

// sensitive names the class of a value that looks like a shell command,
// a URL, a path or a credential, and why; "" for an identifier. The
// rules are exact (the package doc lists them), checked in this order.
func sensitive(s string) (class, why string) {
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Zs, r):
			return ClassShell, "contains a space (an identifier is one word)"
		case strings.ContainsRune(shellChars, r):
			return ClassShell, "contains " + string(r) + ", which a shell reads as syntax"
		}
	}
	if why := urlLike(s); why != "" {
		return ClassURL, why
	}
	if why := pathLike(s); why != "" {
		return ClassPath, why
	}
	if why := tokenLike(s); why != "" {
		return ClassToken, why
	}
	return "", ""
}

// shellChars are the characters a shell reads as command separators,
// pipes, substitution, redirection or quoting.
const shellChars = ";&|`$<>()'\""

// pathLike: a leading "~" or drive, a backslash anywhere, or a
// "/"-separated segment that is empty, "." or ".." (a leading, doubled
// or trailing slash, a step up or a step in place). What stays is a
// relative name of plain segments, such as "org/repo" or "feature/x":
// it names nothing outside the place its reader roots it in.
func pathLike(s string) string {
	switch {
	case s[0] == '~':
		return "is a home-relative path"
	case isDrive(s):
		return "is an absolute path (a drive)"
	}
	if strings.ContainsRune(s, '\\') {
		return "contains a backslash (a path separator)"
	}
	for seg := range strings.SplitSeq(s, "/") {
		switch seg {
		case "":
			return "has an empty path segment (a leading, doubled or trailing /)"
		case ".", "..":
			return "has a " + seg + " path segment"
		}
	}
	return ""
}

// urlLike: "://" anywhere (a URL with an authority, whatever the scheme:
// https://x, file:///etc/passwd, git+ssh://host/repo), a value that
// starts with the scheme "file:" or "data:" (which need no authority),
// or an scp-style remote "user@host:path".
func urlLike(s string) string {
	if strings.Contains(s, "://") {
		return "is a URL (it contains ://)"
	}
	lower := strings.ToLower(s)
	for _, scheme := range []string{"file:", "data:"} {
		if strings.HasPrefix(lower, scheme) {
			return "is a " + strings.TrimSuffix(scheme, ":") + " URL"
		}
	}
	if at := strings.IndexByte(s, '@'); at > 0 && strings.IndexByte(s[at:], ':') > 0 {
		return "is a remote with user information (user@host:path)"
	}
	return ""
}

// tokenPrefixes start the credentials this package recognizes when at
// least minTokenTail token characters ([A-Za-z0-9_-]) follow: GitHub,
// GitLab, Slack, and the secret keys of OpenAI-style and Stripe APIs.
var tokenPrefixes = []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
	"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "sk-", "sk_live_", "sk_test_", "rk_live_"}

const minTokenTail = 16

// secretKeys name a secret when "=" follows them ("token=...").
var secretKeys = []string{"password=", "passwd=", "secret=", "token=", "api_key=", "apikey=", "access_key="}

// tokenLike: a recognized token prefix at the start of the value or
// after a character that cannot be part of a token, followed by at
// least minTokenTail token characters; an AWS access key id (AKIA or
// ASIA and 16 uppercase letters or digits); a JSON Web Token (three
// dot-separated base64url parts, the first starting "eyJ"); a PEM block
// ("-----BEGIN"); or a secret's name followed by "=". An opaque random
// string without such a mark cannot be told from an identifier and is
// not refused.
func tokenLike(s string) string {
	for i := 0; i < len(s); i++ {
		if i > 0 && isTokenChar(s[i-1]) {
			continue // only where a token could start
		}
		rest := s[i:]
		for _, p := range tokenPrefixes {
			if strings.HasPrefix(rest, p) && tokenRun(rest[len(p):]) >= minTokenTail {
				return "looks like a credential (" + p + "...)"
			}
		}
		if (strings.HasPrefix(rest, "AKIA") || strings.HasPrefix(rest, "ASIA")) && upperAlnumRun(rest[4:]) >= 16 {
			return "looks like an AWS access key id"
		}
		if strings.HasPrefix(rest, "eyJ") && isJWT(rest) {
			return "looks like a JSON Web Token"
		}
	}
	if strings.Contains(s, "-----BEGIN") {
		return "looks like a PEM block"
	}
	lower := strings.ToLower(s)
	for _, k := range secretKeys {
		if strings.Contains(lower, k) {
			return "names a secret (" + k + "...)"
		}
	}
	return ""
}

func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// tokenRun is how many token characters s starts with.
func tokenRun(s string) int {
	n := 0
	for n < len(s) && isTokenChar(s[n]) {
		n++
	}
	return n
}

func upperAlnumRun(s string) int {
	n := 0
	for n < len(s) && (s[n] >= 'A' && s[n] <= 'Z' || s[n] >= '0' && s[n] <= '9') {
		n++
	}
	return n
}

// isJWT reports whether s starts with three non-empty base64url parts
// joined by dots.
func isJWT(s string) bool {
	for part := 0; part < 3; part++ {
		n := tokenRun(s)
		if n == 0 {
			return false
		}
		s = s[n:]
		if part < 2 {
			if len(s) == 0 || s[0] != '.' {
				return false
			}
			s = s[1:]
		}
	}
	return true
}
