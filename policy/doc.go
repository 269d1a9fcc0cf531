// Package policy is airlock's pre-flight check: it judges a shell command before any
// container exists. It is pure Go, with no Docker and no I/O.
//
// A command is parsed with a real shell parser (mvdan.cc/sh/v3/syntax), never
// matched as a raw string, and every simple command in it is judged on its own:
// inside pipelines, lists, subshells, substitutions, functions, loops and
// conditionals, and recursively inside `sh -c` strings, eval and trap. Command
// names are normalised (`/bin/rm`, `\rm`, `r”m`, `$'\x72\x6d'` are all rm) and
// wrappers are looked through (env, nice, nohup, timeout, xargs, command, exec,
// busybox, time, stdbuf, ...). Variables assigned literal values in the script are
// followed, so `x=rm; $x -rf /` is rm.
//
// The layers, in order, for each simple command: operator allow patterns (which
// excuse that one command, never the rest of the string), built-in deny rules and
// operator deny rules, the optional allowlist, and the optional workspace path
// rules. Mode off allows everything; standard refuses what the rules match; strict
// also refuses what no static check can decide: dynamic command names, pipes into
// a shell or interpreter, and input that does not parse.
//
// The container stays the real boundary; the policy turns the obvious mistakes and
// the known-bad into clear refusals before they cost a container.
package policy
