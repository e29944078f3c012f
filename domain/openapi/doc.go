// Package openapi describes Arbiter's HTTP API once: an OpenAPI 3.1
// document generated from the route table (domain.Route, with the request
// and result Go types that domain.Endpoint records) and served at
// GET /v1/openapi.json, plus a validator for the subset of JSON Schema the
// document uses, so that examples and clients can be checked against it.
//
// Schemas come from the Go types by reflection over their json tags: a
// struct is an object that refuses unknown fields (the server decodes
// strictly) and requires the fields encoding/json always writes (those
// without omitempty); a slice, map or pointer may also be null, as Go
// writes a nil one. Named types are components, "package.Type". A type
// with its own MarshalJSON is any JSON value, one with MarshalText a
// string. Routes with a hand-written handler (the host's own) are listed
// with their method, path and access only.
//
// Hand-written rather than a library: the generator is a few hundred lines
// over reflect with nothing to configure, and the OpenAPI libraries on
// the module proxy either model 3.0 (kin-openapi, go-openapi) or would add
// a dependency tree to every program that embeds the library.
package openapi
