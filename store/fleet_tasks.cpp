#include "store/fleet_tasks.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "protocol/bounded_json.hpp"
#include "store/session_paths.hpp"

namespace troupe {

namespace {

constexpr size_t longest_task_id = 200;
constexpr int32_t most_task_steps = 1000000;

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() &&
         text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Why `id` cannot name a task, empty when it can.
std::string id_problem(const std::string& id) {
  if (id.empty())
    return "\"id\" is empty";
  if (id.size() > longest_task_id)
    return "\"id\" is longer than " + std::to_string(longest_task_id) + " characters";
  if (std::any_of(id.begin(), id.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }))
    return "\"id\" holds a control character";
  return {};
}

// max_steps as given (a JSON integer or CSV text), or why not.
std::string read_max_steps(const nlohmann::json& value, int32_t& steps) {
  if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
      value.get<int64_t>() > most_task_steps)
    return "\"max_steps\" must be an integer from 1 to " + std::to_string(most_task_steps);
  steps = static_cast<int32_t>(value.get<int64_t>());
  return {};
}

// Checks what every task needs, whichever format it came in.
std::string task_problem(const fleet_task& task) {
  if (auto problem = id_problem(task.id); !problem.empty())
    return problem;
  if (task.prompt.find_first_not_of(" \t\r\n") == std::string::npos)
    return "\"prompt\" is missing or empty";
  return {};
}

// One JSONL line: a task, or the reason it is none (with its id when one was readable).
void parse_json_line(const std::string& line, int64_t number, fleet_tasks& out) {
  fleet_task task;
  task.line = number;
  auto fail = [&](const std::string& why) { out.errors.push_back({number, task.id, why}); };
  auto parsed = parse_json_bounded(line);
  if (!parsed)
    return fail(parsed.error());
  auto& object = *parsed;
  if (!object.is_object())
    return fail("not a JSON object");
  // The id first, so that every later error can name the task.
  if (auto id = object.find("id"); id != object.end()) {
    if (id->is_string())
      task.id = id->get<std::string>();
    else if (id->is_number_integer())
      task.id = id->dump();
    else
      return fail("\"id\" must be a string or an integer");
  } else {
    return fail("no \"id\"");
  }
  for (auto& [key, value] : object.items()) {
    auto text = [&](std::string& into) -> std::string {
      if (!value.is_string())
        return "\"" + key + "\" must be a string";
      into = value.get<std::string>();
      return {};
    };
    std::string problem;
    if (key == "id")
      continue;
    else if (key == "prompt")
      problem = text(task.prompt);
    else if (key == "model")
      problem = text(task.model);
    else if (key == "cwd")
      problem = text(task.cwd);
    else if (key == "system")
      problem = text(task.system);
    else if (key == "max_steps")
      problem = read_max_steps(value, task.max_steps);
    else if (key == "allow") {
      if (!value.is_array() ||
          !std::all_of(value.begin(), value.end(), [](auto& rule) { return rule.is_string(); }))
        problem = "\"allow\" must be an array of strings";
      else
        task.allow = value.get<std::vector<std::string>>();
    } else if (key == "metadata") {
      if (!value.is_object())
        problem = "\"metadata\" must be an object";
      else
        task.metadata = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else {
      problem = "unknown field \"" + key +
                "\" (known: id, prompt, model, cwd, max_steps, system, allow, metadata)";
    }
    if (!problem.empty())
      return fail(problem);
  }
  if (auto problem = task_problem(task); !problem.empty())
    return fail(problem);
  out.tasks.push_back(std::move(task));
}

// RFC 4180 records: fields split at commas, "…" quoting with "" for a quote, a quoted field
// may hold commas and line breaks. Each record keeps the line it started on.
struct csv_record {
  int64_t line = 0;
  std::vector<std::string> fields;
  std::string problem;
};

std::vector<csv_record> split_csv(const std::string& text) {
  std::vector<csv_record> records;
  csv_record record;
  std::string field;
  int64_t line = 1;
  bool quoted = false;
  bool was_quoted = false;
  bool record_started = false;
  record.line = 1;
  auto end_field = [&] {
    record.fields.push_back(std::move(field));
    field.clear();
    was_quoted = false;
  };
  auto end_record = [&] {
    if (record_started) {
      end_field();
      records.push_back(std::move(record));
    }
    record = csv_record{};
    record_started = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (!record_started && !quoted)
      record.line = line;
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n')
          ++line;
        field += c;
      }
      continue;
    }
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')
      continue;
    if (c == '\n') {
      ++line;
      end_record();
      continue;
    }
    record_started = true;
    if (c == '"' && field.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      end_field();
    } else if (was_quoted) {
      record.problem = "text after a closing quote";
      field += c;
    } else {
      field += c;
    }
  }
  if (quoted)
    record.problem = "a quoted field is not closed before the end of the file";
  end_record();
  return records;
}

std::string trimmed(const std::string& text) {
  auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos)
    return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

expected<fleet_tasks> parse_csv(const std::string& text) {
  auto records = split_csv(text);
  if (records.empty())
    return failure{"the CSV file has no header row"};
  const auto& header = records.front();
  std::vector<std::string> columns;
  for (auto& name : header.fields)
    columns.push_back(lowercase(trimmed(name)));
  for (auto needed : {"id", "prompt"})
    if (std::find(columns.begin(), columns.end(), needed) == columns.end())
      return failure{std::string{"the CSV header (line 1) has no \""} + needed +
                     "\" column; it needs id and prompt, and may have model, cwd, max_steps, "
                     "system, allow (rules split at ';'); other columns become metadata"};
  if (std::set<std::string>{columns.begin(), columns.end()}.size() != columns.size())
    return failure{"the CSV header (line 1) names a column twice"};
  fleet_tasks out;
  for (size_t r = 1; r < records.size(); ++r) {
    auto& record = records[r];
    fleet_task task;
    task.line = record.line;
    auto fail = [&](const std::string& why) { out.errors.push_back({record.line, task.id, why}); };
    auto id_at = std::find(columns.begin(), columns.end(), "id") - columns.begin();
    if (static_cast<size_t>(id_at) < record.fields.size())
      task.id = trimmed(record.fields[static_cast<size_t>(id_at)]);
    if (!record.problem.empty()) {
      fail(record.problem);
      continue;
    }
    if (record.fields.size() != columns.size()) {
      fail("has " + std::to_string(record.fields.size()) + " fields; the header has " +
           std::to_string(columns.size()));
      continue;
    }
    nlohmann::json metadata = nlohmann::json::object();
    std::string problem;
    for (size_t c = 0; c < columns.size() && problem.empty(); ++c) {
      auto& name = columns[c];
      auto& value = record.fields[c];
      if (name == "id")
        continue;
      if (name == "prompt")
        task.prompt = value;
      else if (name == "model")
        task.model = trimmed(value);
      else if (name == "cwd")
        task.cwd = trimmed(value);
      else if (name == "system")
        task.system = value;
      else if (name == "max_steps") {
        auto digits = trimmed(value);
        if (digits.empty())
          continue;
        if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit))
          problem = "\"max_steps\" must be an integer from 1 to " + std::to_string(most_task_steps);
        else
          problem = read_max_steps(nlohmann::json(std::stoll(digits)), task.max_steps);
      } else if (name == "allow") {
        size_t start = 0;
        while (start <= value.size()) {
          auto end = value.find(';', start);
          auto rule = trimmed(value.substr(start, end - start));
          if (!rule.empty())
            task.allow.push_back(rule);
          if (end == std::string::npos)
            break;
          start = end + 1;
        }
      } else {
        metadata[header.fields[c]] = value;
      }
    }
    if (!problem.empty()) {
      fail(problem);
      continue;
    }
    if (!metadata.empty())
      task.metadata = metadata.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (auto why = task_problem(task); !why.empty()) {
      fail(why);
      continue;
    }
    out.tasks.push_back(std::move(task));
  }
  return out;
}

fleet_tasks parse_jsonl(const std::string& text) {
  fleet_tasks out;
  size_t start = 0;
  int64_t number = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    auto line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    ++number;
    start = end == std::string::npos ? text.size() : end + 1;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos)
      continue;
    parse_json_line(line, number, out);
  }
  return out;
}

} // namespace

fleet_tasks_format guess_fleet_tasks_format(const std::string& file_name,
                                            const std::string& text) {
  auto name = lowercase(file_name);
  if (ends_with(name, ".csv"))
    return fleet_tasks_format::csv;
  if (ends_with(name, ".jsonl") || ends_with(name, ".json") || ends_with(name, ".ndjson"))
    return fleet_tasks_format::jsonl;
  auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{' ? fleet_tasks_format::jsonl
                                                          : fleet_tasks_format::csv;
}

expected<fleet_tasks> parse_fleet_tasks(const std::string& raw, fleet_tasks_format format) {
  // A byte-order mark (Excel's "CSV UTF-8" starts with one) is no part of the first field.
  std::string text = raw.rfind("\xEF\xBB\xBF", 0) == 0 ? raw.substr(3) : raw;
  fleet_tasks parsed;
  if (format == fleet_tasks_format::csv) {
    auto csv = parse_csv(text);
    if (!csv)
      return csv;
    parsed = std::move(*csv);
  } else {
    parsed = parse_jsonl(text);
  }
  if (parsed.tasks.empty() && parsed.errors.empty())
    return failure{"the tasks file holds no task"};
  // A line without a readable id is named by its number, as its result line is; a task that
  // took that name is a duplicate of it.
  for (auto& error : parsed.errors)
    if (error.id.empty())
      error.id = "line-" + std::to_string(error.line);
  // Two tasks with one id (or ids that share a session directory) would share a result line
  // and a session: nothing runs until the file says which is which.
  std::map<std::string, int64_t> seen;
  std::map<std::string, int64_t> seen_sessions;
  auto check = [&](const std::string& id, int64_t line) -> std::string {
    auto [at, fresh] = seen.emplace(id, line);
    if (!fresh)
      return "duplicate task id \"" + id + "\" on lines " + std::to_string(at->second) +
             " and " + std::to_string(line) + ": every task needs an id of its own";
    auto [session_at, fresh_session] = seen_sessions.emplace(task_session_id("", id), line);
    if (!fresh_session)
      return "the task ids on lines " + std::to_string(session_at->second) + " and " +
             std::to_string(line) + " map to one session directory; rename one";
    return {};
  };
  std::vector<std::pair<int64_t, std::string>> ids;
  for (auto& task : parsed.tasks)
    ids.emplace_back(task.line, task.id);
  for (auto& error : parsed.errors)
    ids.emplace_back(error.line, error.id);
  std::sort(ids.begin(), ids.end());
  for (auto& [line, id] : ids)
    if (auto problem = check(id, line); !problem.empty())
      return failure{problem};
  std::sort(parsed.errors.begin(), parsed.errors.end(),
            [](auto& a, auto& b) { return a.line < b.line; });
  return parsed;
}

std::string fleet_task_line(const fleet_task& task) {
  nlohmann::json line = {{"id", task.id}, {"prompt", task.prompt}};
  if (!task.model.empty())
    line["model"] = task.model;
  if (!task.cwd.empty())
    line["cwd"] = task.cwd;
  if (task.max_steps > 0)
    line["max_steps"] = task.max_steps;
  if (!task.system.empty())
    line["system"] = task.system;
  if (!task.allow.empty())
    line["allow"] = task.allow;
  if (!task.metadata.empty())
    line["metadata"] = nlohmann::json::parse(task.metadata);
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace troupe
