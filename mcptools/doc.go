// Package mcptools serves Arbiter to agents as Model Context Protocol
// tools and resources (issue 41), on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): `arbiter mcp` runs it over
// stdio, `arbiter serve --mcp` mounts it at /mcp (streamable HTTP).
//
// # Transports
//
// `arbiter mcp` serves New's server on its standard input and output,
// with one client (Fixed) whose credential is the process's. A node
// started with `arbiter serve --mcp` mounts HTTPHandler at /mcp
// (cluster.Config.Mounts): the node authenticates the request as the
// API's, and each tool call goes to the node's own API handler in
// process with the request's bearer token, so that it is that
// principal's call (stateless streamable HTTP, answers as JSON).
//
// # A client of the cluster
//
// The server is a client of the cluster: every tool is one call (or, for
// publish_projection, a few) of the light Go client (package client) on
// the cluster's JSON HTTP API. It imports client, the SDK and api (the
// API's document), never the cluster, fsm or domain packages, so that:
//
//   - a tool's result is the API's JSON body (the client's result types
//     mirror the API's, a drift test in package client keeps them so),
//     as text content and as structured content;
//   - a refusal is a tool result with isError whose content is the API's
//     error body: allocation's flat 409 (error allocation_conflict, code,
//     winner, write_occurred false) from client.AllocationConflictError,
//     {"error": {code, message, detail}} for every other (stale_fence,
//     exhausted with retry_after_ms, ...), with _meta.http_status the
//     status the API answers it with. Arguments that do not fit the
//     tool's input schema are such a refusal too (invalid, 422), checked
//     before anything is sent: nothing changes.
//
// # Inputs and identity
//
// Input schemas come from the API's OpenAPI document, the copy checked
// in as api/openapi.json (package api embeds it and links nothing else;
// its test keeps it what a node serves at /v1/openapi.json). Each tool
// names the operation it calls (its operationId, also in the tool's
// _meta.operation), and its input schema is that operation's request:
// the path, query and header parameters, typed as the values they hold,
// beside the JSON body's properties, $refs inlined. A tool declares what
// it changes of it: parameters it renames (the path's {slug} and {id}
// are space and task_id, the Idempotency-Key header idempotency_key),
// properties it sets itself and leaves out (owners, the schema version,
// a read's consistency), properties of its own (publish_projection's
// channels: projection_submit's requests), and which properties it
// requires: what the API's handler requires, which the document does
// not say (the server refuses unknown fields, never missing ones).
// Descriptions are the jsonschema tags of the tool's Go input type, the
// type the arguments are decoded into. TestToolSchemasAreTheDocuments
// checks every tool's listed schema against the document, and
// TestToolInputsHoldTheirSchemas each Go input type against its schema.
//
// Tools never take an owner or a principal: the credential
// decides (the --token of `arbiter mcp`, the HTTP request's own on
// /mcp). Where the API asks for an owner field bound to the principal
// (concepts' owner_ref, capacity's owner_digest, a claim's owner_ref),
// the tool leaves it out of its input and fills it from whoami.
//
// # Which tools
//
// A domain's tools and resources are registered only where the cluster
// enables its commands (EnabledOf reads the capabilities once, when the
// server is built; a server started before an upgrade enables a domain
// lists it after a restart). Write tools name the command they need:
//
//	allocation  allocation_bind, allocation_create_task,
//	            allocation_transition_task, allocation_post_note,
//	            allocation_supersede_task, allocation_list_tasks
//	authority   concept_reserve, concept_reserve_next,
//	            concept_transition, concept_get
//	capacity    capacity_acquire, capacity_renew, capacity_release,
//	            capacity_status
//	workitem    workitem_submit, workitem_submit_batch, workitem_claim,
//	            workitem_complete, workitem_cancel, workitem_get,
//	            workitem_list, reservation_reserve, reservation_release,
//	            reservation_query, reservation_list_hosts
//	projection  projection_submit, projection_acquire,
//	            projection_publish, projection_release,
//	            publish_projection, projection_target
//	nodes       node_create, node_cas, node_get
//
// Resources: arbiter://cluster/status and arbiter://cluster/capabilities
// always; arbiter://spaces/{space}/tasks with allocation;
// arbiter://projection/targets/{target_id}/current with projection.
package mcptools
