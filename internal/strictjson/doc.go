// Package strictjson is the one strict JSON decoder of Arbiter: request
// bodies, policy files and principal files all go through it.
package strictjson
