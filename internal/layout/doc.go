// Package layout holds the test that keeps the repository's dependency rule
// (CONTRIBUTING.md, "Layout"):
//
//   - topics imports no other package of the module; pipeline imports only
//     topics.
//   - A stage package (stages/NAME and everything under it) is imported only
//     by its own subtree, the stage registry (stages), the CLI (cmd/...) and
//     the tools under internal/. No stage imports another stage, and no
//     library (compilefix, backfill, tasks, sandbox, openai, ...) imports a
//     stage.
//   - Kafka clients (kafka-go, Watermill, franz-go) are imported only by
//     pipeline, the deployment checks under deploy/ and the tools under
//     internal/.
package layout
