// Package rawwire is the wire of a raw call to a node's API: the msgpack
// Propose/Query exchange (POST /v1/commands, /v1/queries and the
// node-to-node /v1/internal/apply and /v1/internal/query) and the
// classification of what comes back, shared by a node's forwarding to
// its leader (package cluster) and by internal/rawremote.
//
// A request body is an encoded log.Command (apply) or query; the answer
// is a Reply, in msgpack, with HTTP status 200 whenever a reply was
// produced: failures travel inside it with their code. A call that got no
// reply is classified by TransportError (a failed dial never reached the
// node: unavailable, safe to retry; any later failure: outcome unknown)
// and a non-OK HTTP answer by ReplyError (the JSON error body, else a
// code derived from the status).
//
// It is not a client: embedders use package client (the public JSON
// API). Nothing here keeps state; every read of an answer is bounded by
// MaxReplyBytes.
package rawwire
