#pragma once
// Custom subagent types from markdown files with front matter, in Claude Code's layout: the
// user's ($XDG_CONFIG_HOME/troupe/agents/*.md) and the workspace's (.claude/agents/*.md,
// .troupe/agents/*.md), read once at start-up.
//
//   ---
//   name: code-reviewer
//   description: Reviews a diff for bugs; use after a change.
//   tools: Read, Grep, Glob          # Claude Code's names or troupe's; none: all the parent's
//   model: inherit                   # or a model spec (anthropic/…, openai/…, scripted:PATH)
//   ---
//   You are a careful reviewer. …    (the body: its instructions)

#include <filesystem>
#include <string>

#include "protocol/agent_type.hpp"
#include "protocol/expected.hpp"

namespace troupe {

/// Parses one definition. The front matter is a small part of YAML: `key: value` lines with
/// plain, quoted ('…', "…") or block (|, >) values, and lists as `a, b`, `[a, b]` or `- a`
/// lines; `name` and `description` are required, `tools` and `disallowedTools` name tools,
/// `model` is `inherit` or a model spec; other keys are ignored. An error reads
/// "FILE:LINE: what is wrong".
expected<agent_type> parse_agent_definition(const std::string& text, const std::string& file);

/// Reads the types of a workspace: `user_dir`/agents/*.md, then `workspace`/.claude/agents/*.md,
/// then `workspace`/.troupe/agents/*.md; a later file replaces an earlier one of the same name,
/// two of one name in one directory are an error. A project file that leads outside the project
/// (project_root) is an error, as is one that cannot be read.
expected<agent_types> read_agent_types(const std::filesystem::path& workspace,
                                       const std::filesystem::path& user_dir,
                                       const std::filesystem::path& home);

} // namespace troupe
