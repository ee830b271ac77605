#include "orchestrator/model_flags.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "orchestrator/environment.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

namespace {

bool valid_port(std::string_view port) {
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  auto number = std::stoi(std::string{port});
  return number >= 1 && number <= 65535;
}

// True for HOST or HOST:PORT, HOST a name, an IPv4 address or a bracketed IPv6 address.
bool valid_authority(std::string_view authority) {
  auto all_of = [](std::string_view text, auto allowed) {
    return std::all_of(text.begin(), text.end(),
                       [&](char c) { return allowed(static_cast<unsigned char>(c)); });
  };
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos || close == 1 ||
        !all_of(authority.substr(1, close - 1),
                [](unsigned char c) { return std::isxdigit(c) != 0 || c == ':' || c == '.'; }))
      return false;
    auto rest = authority.substr(close + 1);
    return rest.empty() || (rest.front() == ':' && valid_port(rest.substr(1)));
  }
  auto host = authority;
  if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    if (!valid_port(authority.substr(colon + 1)))
      return false;
  }
  return !host.empty() && all_of(host, [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_';
  });
}

// Checks a base URL before any request: scheme http(s), a host, an optional port and path.
// (Checked here, not by libcurl, so that libcurl can load while the run starts.)
expected<std::string> check_base_url(const std::string& url, const char* source) {
  std::string_view rest = url;
  bool http = false;
  for (std::string_view scheme : {"http://", "https://"})
    if (rest.substr(0, scheme.size()) == scheme) {
      rest.remove_prefix(scheme.size());
      http = true;
    }
  auto authority = rest.substr(0, rest.find_first_of("/?#"));
  bool printable = std::all_of(url.begin(), url.end(), [](char c) {
    return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
  });
  if (!http || !printable || authority.find('@') != std::string_view::npos ||
      !valid_authority(authority)) {
    // Credentials in the URL are not echoed: the message may end up in a log or a CI page.
    // Everything up to the last '@' goes, whatever the scheme's spelling or the password holds.
    auto shown = url;
    if (auto at = url.rfind('@'); at != std::string::npos) {
      auto scheme = url.find("://");
      auto from = scheme != std::string::npos && scheme < at ? scheme + 3 : 0;
      shown = url.substr(0, from) + "…@" + url.substr(at + 1);
    }
    return failure{std::string{"invalid "} + source + " '" + shown +
                   "': expected http://HOST[:PORT][/PATH] or https://… (no user:password@)"};
  }
  return url;
}

std::string ollama_base_url(std::string host) {
  if (host.find("://") == std::string::npos)
    host = "http://" + host;
  auto path_start = host.find('/', host.find("://") + 3);
  if (path_start == std::string::npos)
    host += "/v1";
  return host;
}

// An API key from the environment: surrounding whitespace (a key read from a file with CRLF
// line ends keeps its "\r") is dropped; a control character left inside would break the
// request's header, and is refused by the variable's name.
expected<std::string> api_key_from(const char* variable) {
  std::string key{trim(env_or(variable))};
  if (std::any_of(key.begin(), key.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    return failure{std::string{variable} + " holds a control character (a line break?) inside "
                   "the key: set it to the key alone"};
  return key;
}

// Where a provider's requests go, as configured: unchecked.
std::string configured_base_url(const std::string& provider) {
  if (provider == "anthropic")
    return env_or("ANTHROPIC_BASE_URL", "https://api.anthropic.com");
  if (provider == "openai")
    return env_or("OPENAI_BASE_URL", "https://api.openai.com/v1");
  return ollama_base_url(env_or("OLLAMA_HOST", "http://127.0.0.1:11434/v1"));
}

const char* no_model_help =
  "no model configured: pass --model openai/MODEL (with OPENAI_API_KEY), anthropic/MODEL "
  "(with ANTHROPIC_API_KEY), ollama/MODEL or scripted:PATH, or set TROUPE_MODEL "
  "(`troupe demo` runs offline)";

} // namespace

expected<std::string> qualified_model_spec(const std::string& model) {
  if (model.rfind("scripted:", 0) == 0 || model.find('/') != std::string::npos)
    return model;
  auto starts = [&](std::string_view prefix) { return model.rfind(prefix, 0) == 0; };
  if (model == "sonnet")
    return std::string{"anthropic/"} + sonnet_model;
  if (model == "opus")
    return std::string{"anthropic/"} + opus_model;
  if (model == "haiku")
    return std::string{"anthropic/"} + haiku_model;
  if (starts("claude-"))
    return "anthropic/" + model;
  if (starts("gpt-") || starts("chatgpt-") || starts("o1") || starts("o3") || starts("o4"))
    return "openai/" + model;
  return failure{"unknown model '" + model +
                 "': use openai/MODEL, anthropic/MODEL, ollama/MODEL or scripted:PATH; without a "
                 "provider, claude-*, sonnet, opus and haiku are Anthropic's and gpt-*, "
                 "chatgpt-*, o1*, o3* and o4* OpenAI's"};
}

std::optional<std::string> api_base_url(const std::string& model) {
  auto qualified = qualified_model_spec(model);
  if (!qualified)
    return std::nullopt;
  auto provider = qualified->substr(0, qualified->find('/'));
  if (provider != "openai" && provider != "anthropic" && provider != "ollama")
    return std::nullopt;
  return configured_base_url(provider);
}

expected<model_choice> resolve_model_spec(const std::string& given, const run_flags& flags) {
  auto qualified = qualified_model_spec(given);
  if (!qualified)
    return failure{qualified.error()};
  const auto& model = *qualified;
  model_choice choice;
  constexpr std::string_view scripted = "scripted:";
  if (model.rfind(scripted, 0) == 0) {
    auto path = model.substr(scripted.size());
    if (path.empty())
      return failure{"--model scripted: needs a script path, e.g. --model scripted:replies.jsonl"};
    auto lines = load_script(path);
    if (!lines)
      return failure{lines.error()};
    choice.model_script = std::move(*lines);
    choice.format = flags.tool_format == "tool"  ? tool_format::tool
                    : flags.tool_format == "xml" ? tool_format::xml
                                                 : tool_format::markdown;
    return choice;
  }
  auto slash = model.find('/');
  auto provider = model.substr(0, slash);
  auto name = slash == std::string::npos ? std::string{} : model.substr(slash + 1);
  if (slash == std::string::npos || name.empty() ||
      (provider != "openai" && provider != "anthropic" && provider != "ollama"))
    return failure{"unknown model '" + model + "': use openai/MODEL, anthropic/MODEL, " +
                   "ollama/MODEL or scripted:PATH"};
  http_model_config http;
  http.provider.model = name;
  expected<std::string> base = std::string{};
  if (provider == "anthropic") {
    http.provider.kind = provider_kind::anthropic;
    auto key = api_key_from("ANTHROPIC_API_KEY");
    if (!key)
      return failure{key.error()};
    http.provider.api_key = *key;
    if (http.provider.api_key.empty())
      return failure{"anthropic/" + name + " needs an API key: set ANTHROPIC_API_KEY"};
    base = check_base_url(configured_base_url(provider), "ANTHROPIC_BASE_URL");
  } else if (provider == "openai") {
    auto key = api_key_from("OPENAI_API_KEY");
    if (!key)
      return failure{key.error()};
    http.provider.api_key = *key;
    if (http.provider.api_key.empty())
      return failure{"openai/" + name + " needs an API key: set OPENAI_API_KEY"};
    base = check_base_url(configured_base_url(provider), "OPENAI_BASE_URL");
  } else {
    base = check_base_url(configured_base_url(provider), "OLLAMA_HOST");
  }
  if (!base)
    return failure{base.error()};
  http.provider.base_url = *base;
  http.provider.stream = !flags.no_stream;
  http.provider.format = flags.tool_format == "markdown" ? tool_format::markdown
                         : flags.tool_format == "xml"    ? tool_format::xml
                                                         : tool_format::tool;
  http.max_retries = flags.max_retries;
  http.idle_timeout_ms = flags.stream_idle_timeout_s * 1000;
  http.request_timeout_ms = flags.request_timeout_s * 1000;
  http.min_bytes_per_second = flags.min_transfer_rate;
  http.max_reply_bytes = flags.max_reply_bytes;
  http.max_event_bytes = flags.max_event_bytes;
  choice.format = http.provider.format;
  choice.http_model = std::move(http);
  return choice;
}

std::string anchored_model_spec(const std::string& spec, const std::filesystem::path& base) {
  constexpr std::string_view scripted = "scripted:";
  if (spec.rfind(scripted, 0) != 0 || spec.size() == scripted.size() ||
      spec[scripted.size()] == '/' || base.empty())
    return spec;
  return std::string{scripted} + (base / spec.substr(scripted.size())).lexically_normal().string();
}

expected<bool> resolve_model(const run_flags& flags, run_settings& settings) {
  // A resumed session keeps its model unless --model names another.
  bool recorded = flags.model.empty() && !settings.recorded_model.empty();
  auto model = !flags.model.empty() ? flags.model
               : recorded           ? settings.recorded_model
                                    : env_or("TROUPE_MODEL");
  if (model.empty()) {
    // A key alone is enough: it names the provider, and each has a sensible default model.
    if (!env_or("ANTHROPIC_API_KEY").empty())
      model = "anthropic/claude-sonnet-4-5";
    else if (!env_or("OPENAI_API_KEY").empty())
      model = "openai/gpt-4.1";
    else
      return failure{no_model_help};
  }
  // Recorded with its provider, so that a resume finds the same one.
  auto qualified = qualified_model_spec(model);
  if (!qualified)
    return failure{qualified.error()};
  model = *qualified;
  // A script is found again on resume from anywhere: given, it is anchored where troupe was
  // started; recorded relative (sessions from before), in the session's workspace.
  std::error_code ec;
  model = anchored_model_spec(model, recorded ? settings.cwd : std::filesystem::current_path(ec));
  settings.model_name = model;
  auto choice = resolve_model_spec(model, flags);
  if (!choice)
    return failure{recorded ? "the session's model " + model + " (give --model for another): " +
                                choice.error()
                            : choice.error()};
  settings.model_script = std::move(choice->model_script);
  settings.http_model = std::move(choice->http_model);
  settings.format = choice->format;
  settings.resolve_model = [flags](const std::string& spec) {
    return resolve_model_spec(spec, flags);
  };
  return true;
}

expected<bool> resolve_fallback_model(const run_flags& flags, run_settings& settings) {
  if (flags.fallback_model.empty())
    return true;
  auto qualified = qualified_model_spec(flags.fallback_model);
  if (!qualified)
    return failure{"--fallback-model: " + qualified.error()};
  std::error_code ec;
  auto spec = anchored_model_spec(*qualified, std::filesystem::current_path(ec));
  if (spec == settings.model_name)
    return failure{"--fallback-model " + flags.fallback_model + " is the run's own model (" +
                   settings.model_name + "): name another"};
  // Checked now (its key, its script), not when the main model first fails.
  if (auto choice = resolve_model_spec(spec, flags); !choice)
    return failure{"--fallback-model: " + choice.error()};
  settings.fallback_model = spec;
  return true;
}

} // namespace troupe
