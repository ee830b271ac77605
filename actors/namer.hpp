#pragma once
// The session namer: after a session's first reply, a 3-6 word name for `troupe ls` and
// `--resume NAME`, asked of a model of its own so the session's loop never waits for it.

#include <string>

#include "protocol/interfaces.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// What the namer's request says; the fake model server in the tests recognises it.
inline constexpr const char* namer_instruction =
  "Title this coding session: answer with a title of 3 to 6 words that says what the user wants "
  "done, and nothing else (no quotes, no punctuation at the end).";

/// Spawns a namer that asks `model` (its own client, no tools). Without a model (the scripted
/// provider, headless runs) it names from the prompt's first words, deterministically.
namer_actor spawn_namer(caf::actor_system& sys, model_client_actor model);

/// A name from a prompt's first words: lower case, at most 6 words of letters and digits.
std::string name_from_prompt(const std::string& prompt);

/// A model's answer made into a name: its first line, quotes and markup stripped, at most 6
/// words and 60 bytes; empty when nothing is left.
std::string clean_name(const std::string& answer);

} // namespace troupe
