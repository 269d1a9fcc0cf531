package api

import "time"

// Node is one node of an airlock cluster (airlock serve --database) as
// GET /v1/nodes reports it. Times and liveness are the cluster database's,
// never a node's own clock.
type Node struct {
	ID string `json:"id"`
	// Address is where the other nodes reach its API (its --advertise).
	Address string `json:"address"`
	// Live is false once its lease has run out: the cluster treats it as dead.
	Live bool `json:"live"`
	// Draining nodes get no new placements; their running work ends normally.
	Draining bool `json:"draining"`
	// Lease is how long one heartbeat keeps it alive, in seconds; LeaseAge the
	// seconds since its last heartbeat.
	Lease    Seconds `json:"lease"`
	LeaseAge Seconds `json:"lease_age"`
	// Slots is how many sandboxes it runs at once; Memory its sandbox memory
	// budget in bytes.
	Slots  int   `json:"slots"`
	Memory int64 `json:"memory"`
	// Running counts its jobs placed or running; MemoryInUse sums their memory.
	Running     int   `json:"running"`
	MemoryInUse int64 `json:"memory_in_use"`
	// RegisteredAt is when it last started; HeartbeatAt its last heartbeat.
	RegisteredAt time.Time `json:"registered_at"`
	HeartbeatAt  time.Time `json:"heartbeat_at"`
}

// NodeList answers GET /v1/nodes: every node the cluster knows, dead ones too,
// by id.
type NodeList struct {
	// Self is the id of the node that answered.
	Self  string `json:"self"`
	Nodes []Node `json:"nodes"`
}

// DrainRequest is the body of POST /v1/nodes/{id}/drain: true stops new
// placements on the node, false lets them resume. It is required.
type DrainRequest struct {
	Drain *bool `json:"drain"`
}
