// Package govern is the govern stage: it turns execution records into
// training samples and grows rollout trees (DESIGN §4 govern).
//
// Consumes: executions. Produces: samples (one per execution) and, for a
// normal unsolved node below the tree's last turn, one refinement prompt on
// the refinements topic. Keeps: nothing between records (an in-memory cache
// of LLM judgements is an optimisation only).
//
// For every execution the stage
//
//  1. classifies the failure cause into the taxonomy of README.md
//     (infrastructure, degeneration, normal) and picks the route
//     (masked, last_step_penalty, train);
//  2. rewards normal samples by the tree's reward policy (pass_rate, binary,
//     tiered) with a chain of pluggable semantic judges (tests, reference
//     patch, LLM);
//  3. turns step-level process scores from a pluggable scorer (none,
//     heuristic, LLM) into per-token loss weights, never into the reward;
//  4. decides expansion and builds the refinement prompt from a template.
//
// The core (Governor) is a function over one record and a task; Stage wraps
// it as a pipeline.Handler.
package govern
