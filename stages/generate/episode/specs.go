package episode

import (
	"encoding/json"

	"github.com/murphy-rl/murphy/openai"
	"github.com/murphy-rl/murphy/topics"
)

// ToolSpecs are the tool definitions sent to the model (function tools
// with JSON-schema parameters), in a fixed order.
func ToolSpecs() []openai.Tool {
	return []openai.Tool{
		{
			Name: ToolReadFile,
			Description: "Read a file of the workspace, with line numbers. Paths are relative to the workspace root. " +
				"Optional start_line and end_line (1-based, inclusive) select lines.",
			Parameters: schema(`{"type":"object","properties":{
				"path":{"type":"string","description":"file path relative to the workspace root"},
				"start_line":{"type":"integer","minimum":1},
				"end_line":{"type":"integer","minimum":1}},
				"required":["path"]}`),
		},
		{
			Name:        ToolSearch,
			Description: "Search the workspace's files for lines matching a regular expression (or literal text), like grep -n.",
			Parameters: schema(`{"type":"object","properties":{
				"pattern":{"type":"string","description":"Go regular expression; searched literally when it is not one"},
				"path":{"type":"string","description":"file or directory to search (default: the whole workspace)"}},
				"required":["pattern"]}`),
		},
		{
			Name:        ToolListFiles,
			Description: "List the workspace's files under a directory (default: the root), recursively.",
			Parameters: schema(`{"type":"object","properties":{
				"path":{"type":"string","description":"directory relative to the workspace root"}}}`),
		},
		{
			Name: ToolEdit,
			Description: "Replace text in a file: old must occur exactly once in the file (white space included) and is " +
				"replaced by new. An empty old with a path that does not exist creates the file with new as its contents.",
			Parameters: schema(`{"type":"object","properties":{
				"path":{"type":"string"},
				"old":{"type":"string","description":"the exact text to replace"},
				"new":{"type":"string","description":"the replacement text"}},
				"required":["path","old","new"]}`),
		},
		{
			Name:        ToolBuild,
			Description: "Run the project's build on the current edits and show its output.",
			Parameters:  schema(`{"type":"object","properties":{}}`),
		},
		{
			Name:        ToolSubmit,
			Description: "Submit the current edits as the fix. This ends the episode.",
			Parameters:  schema(`{"type":"object","properties":{}}`),
		},
	}
}

// ToolRole is what the tool named name does (topics.ToolRole*: read,
// search, list, edit, verify, submit), "" for a name that is not one of
// ToolSpecs. Every step of an episode records it (topics.ToolStep.Role):
// govern's step scorer reads the steps by role, not by name.
func ToolRole(name string) string {
	switch name {
	case ToolReadFile:
		return topics.ToolRoleRead
	case ToolSearch:
		return topics.ToolRoleSearch
	case ToolListFiles:
		return topics.ToolRoleList
	case ToolEdit:
		return topics.ToolRoleEdit
	case ToolBuild:
		return topics.ToolRoleVerify
	case ToolSubmit:
		return topics.ToolRoleSubmit
	}
	return ""
}

// ToolNames are the names of ToolSpecs, in order.
func ToolNames() []string {
	specs := ToolSpecs()
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}

func schema(s string) json.RawMessage {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic("episode: bad tool schema: " + err.Error())
	}
	b, _ := json.Marshal(v)
	return b
}
