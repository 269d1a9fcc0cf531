// Package fileagent is airlock's file agent: the code that reads and writes a
// workspace's files from inside the workspace's holder, where airlock runs it
// as `airlock-init files OP ARGS...` (docker exec, as the workspace's owner).
// Both sides import this package: the agent's operations (Main) and the
// executor's side of its protocol (the exit codes, Frames for stdin).
//
// Why an agent: a run on the same workspace may swap any name for a link, a
// fifo or a directory at any moment. A check of a path followed by a tool that
// opens the same path again (a shell walk, then tar) can be raced; the agent
// never opens a path twice. It walks from a descriptor of the workspace's root
// down, one component at a time, each opened with O_NOFOLLOW (a link is never
// followed, whatever it points to), checks the kind of what it opened on the
// descriptor (fstat), and opens files with O_NONBLOCK, so a fifo never blocks.
// A swap yields the workspace's own file or a refusal, never a byte from
// outside and never a hang.
//
// Writes are all or nothing: every file of an upload is first written under a
// temporary name beside its destination, and renamed into place only once the
// whole upload has arrived (stdin ends with Frames' end mark) and every
// destination accepts it; otherwise the temporary files, and the directories
// the upload created, are removed. Reads are bounded: a file or tree whose
// apparent size (sparse files included) is over the limit the caller gives is
// refused before a byte is sent. docs/DESIGN.md, "Workspaces", has the rest.
package fileagent
