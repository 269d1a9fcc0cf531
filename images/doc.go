// Package images holds airlock's sandbox image recipes and turns each into a
// Docker build context that builds with no registry access.
//
// A recipe lives in images/<name>/. The package only produces build contexts;
// the executor sends them to the engine (every Docker call stays in executor).
package images
