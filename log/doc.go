// Package log defines what goes into the replicated log: the command
// envelope, its canonical codec and the shapes a decoder accepts.
//
// Every entry Arbiter proposes is one Command: a versioned envelope holding
// the command type, the payload version, the leader's time stamp, the
// verified principal, an optional idempotency key and the msgpack payload.
// Encode and Decode are the only way in and out of the log's bytes; Marshal
// and Unmarshal are the canonical msgpack codec every module uses for
// payloads, results and snapshot rows.
//
// Decoding never trusts a length read off the wire: CheckShape walks the
// bytes first and refuses any container that claims more elements than the
// remaining input could hold, floating point numbers (no float may reach
// authoritative state) and extension types.
//
// The hottest types skip reflection. An Appender writes its own msgpack,
// byte for byte what MarshalReflective (reflection, then the canonical
// pass) writes, which CheckAppender verifies in each one's property test;
// Marshal uses it. A Reader reads only the canonical form and declines
// anything else, which then goes to Unmarshal: the reflective decoder
// stays the one definition of what decodes and of every error, and each
// direct decoder has a fuzz test that it only ever agrees with it. The
// envelope itself is coded this way (envelope.go). A snapshot row's
// decoder may also be a SharingDecoder: through a Strings, which a
// restore keeps per decoding goroutine, the strings that repeat across
// rows (labels, property names) are allocated once and shared.
//
// Where the log lives on disk is package log/store, which only the host
// imports: a domain or a client that imports log links no raft store.
package log
