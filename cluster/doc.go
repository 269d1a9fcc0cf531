// Package cluster coordinates many airlock nodes through one PostgreSQL
// database: the nodes and their leases, the durable queue of jobs, where each
// job is placed, the fences that keep a node that lost its lease from
// overwriting what the cluster decided, and the output of ended jobs, kept off
// their hosts.
//
// It is coordination only: it runs no container and speaks no HTTP. A node
// Registers and Heartbeats; requests become jobs with Enqueue; a node with room
// Claims the next job that fits it (capacity, memory, workspace affinity,
// tenant limits and fairness, all decided in SQL under row locks), calls Start
// before its container exists and Finish when it ends, each fenced by the
// (node, attempt) the Claim gave it. Any node runs Sweep now and then: the
// unstarted jobs of dead nodes go back to the queue, the started ones become
// lost (or are retried when they asked), and jobs that waited too long expire.
// A node that comes back asks Owned which of its containers are still its own.
//
// Times are always the database's (now()), never a node's clock. docs/cluster.md
// gives the schema, the rules and what happens when something fails.
package cluster
