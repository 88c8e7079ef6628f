// Package pipeline decodes Sluice pipeline files (HCL) into a graph of
// stages: variables with types, defaults, validation and sensitivity;
// locals; source, transform and sink blocks wired by references
// (input = source.hf). Core-owned meta-arguments (input, enabled) are taken
// with PartialContent; the rest of each block is decoded against the schema
// its plugin or transform advertises, so a typo is reported at its line
// before any tensor byte moves.
//
// The package reads and checks configuration only; planning and running
// belong to core/plan and core/run.
package pipeline
