#include "actors/namer.hpp"

#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "store/ids.hpp"

namespace troupe {

namespace {

constexpr size_t most_words = 6;
constexpr size_t most_bytes = 60;

// Joins at most `most_words` words, cut to `most_bytes` at a word's end.
std::string join_words(const std::vector<std::string>& words) {
  std::string name;
  for (size_t i = 0; i < words.size() && i < most_words; ++i) {
    if (name.size() + 1 + words[i].size() > most_bytes)
      break;
    name += (name.empty() ? "" : " ") + words[i];
  }
  return name;
}

// A word character: letters, digits, and every byte of a UTF-8 sequence.
bool word_byte(char c) {
  auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || std::isalnum(u) != 0 || c == '-' || c == '_' || c == '.' || c == '/' ||
         c == '+' || c == '#';
}

std::string trim_marks(std::string word) {
  while (!word.empty() && (word.back() == '.' || word.back() == '/' || word.back() == '-'))
    word.pop_back();
  while (!word.empty() && (word.front() == '.' || word.front() == '/' || word.front() == '-'))
    word.erase(0, 1);
  return word;
}

std::vector<std::string> words_of(const std::string& text, bool lower) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (auto w = trim_marks(std::move(word)); !w.empty())
      words.push_back(std::move(w));
    word.clear();
  };
  for (char c : text) {
    if (word_byte(c))
      word += lower ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c;
    else
      flush();
  }
  flush();
  return words;
}

struct namer_state {
  model_client_actor model;
};

namer_actor::behavior_type namer(namer_actor::stateful_pointer<namer_state> self,
                                 model_client_actor model) {
  self->state.model = std::move(model);
  // Its model client goes with it: a name still being written is not waited for.
  if (self->state.model)
    self->link_to(self->state.model);
  return {
    [=](name_atom, const std::string& prompt,
        const std::string& reply) -> caf::result<std::string, token_usage> {
      if (!self->state.model)
        return {name_from_prompt(prompt), token_usage{}};
      auto ask = std::make_shared<message>();
      ask->id = new_message_id();
      ask->role = role::user;
      ask->origin = message_origin::namer;
      ask->content = "The user's first message:\n" + prompt.substr(0, 2000) +
                     "\n\nThe assistant's first reply:\n" + reply.substr(0, 1000);
      model_request request;
      request.system_prompt = std::string{namer_instruction};
      request.context.messages.push_back(std::move(ask));
      auto promise = self->make_response_promise<std::string, token_usage>();
      self->request(self->state.model, std::chrono::seconds{60}, generate_atom::value,
                    std::move(request))
        .then(
          [=](model_reply& answer) mutable {
            promise.deliver(answer.ok() ? clean_name(answer.assistant.content) : std::string{},
                            answer.usage);
          },
          [=](caf::error&) mutable { promise.deliver(std::string{}, token_usage{}); });
      return promise;
    },
  };
}

} // namespace

std::string name_from_prompt(const std::string& prompt) {
  return join_words(words_of(prompt, true));
}

std::string clean_name(const std::string& answer) {
  auto line = answer.substr(0, answer.find('\n'));
  // Markup a model likes to add: quotes, backticks, stars, "Title:".
  for (const char* prefix : {"Title:", "title:", "Name:", "name:"})
    if (line.rfind(prefix, 0) == 0)
      line = line.substr(std::string{prefix}.size());
  return join_words(words_of(line, false));
}

namer_actor spawn_namer(caf::actor_system& sys, model_client_actor model) {
  return sys.spawn(namer, std::move(model));
}

} // namespace troupe
