#include "sim/io/yaml.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "sim/core/input_file.hpp"

namespace ddlsim {

struct YamlNode::Impl {
  YAML::Node node;
  std::string file;
  std::shared_ptr<Impl> root;           // keeps the document alive for child views (null for the root itself)
  std::vector<std::string> overridden;  // dotted keys set by --set (kept on the root)
};

namespace {

std::shared_ptr<YamlNode::Impl> make_impl(YAML::Node node, const std::string& file) {
  auto impl = std::make_shared<YamlNode::Impl>();
  impl->node = std::move(node);
  impl->file = file;
  return impl;
}

std::string join_path(const std::string& base, const std::string& key) {
  return base.empty() ? key : base + "." + key;
}

// Duplicate keys are errors (yaml-cpp keeps the first and would ignore the rest). Iterative, and each node
// visited once by its position, so deep nesting and alias bombs cost no more than the text.
// A quoted scalar that runs over lines reading like keys (`name: value`): YAML lets a quoted value span
// lines, so a missing closing quote silently takes the rest of the file (or up to the next quote) into it,
// and the keys there vanish. Refused at the opening quote.
void check_quoted(const YAML::Node& n, const std::string& text, const std::string& file,
                  const std::string& path) {
  if (!n.IsScalar() || n.Tag() != "!") return;  // quoted scalars carry the non-specific tag "!"
  const YAML::Mark m = n.Mark();
  if (m.pos < 0 || static_cast<size_t>(m.pos) >= text.size()) return;
  const char quote = text[static_cast<size_t>(m.pos)];
  if (quote != '"' && quote != '\'') return;
  auto key_like = [&](size_t at) {  // the line starting at `at` begins with `name:` then a blank or its end
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '-')) ++at;
    size_t b = at;
    while (at < text.size() && (std::isalnum(static_cast<unsigned char>(text[at])) || text[at] == '_' ||
                                text[at] == '.' || text[at] == '-'))
      ++at;
    return at > b && at + 1 <= text.size() && text[at] == ':' &&
           (at + 1 == text.size() || text[at + 1] == ' ' || text[at + 1] == '\n' || text[at + 1] == '\r');
  };
  int lines = 0;
  bool keys = false;
  size_t i = static_cast<size_t>(m.pos) + 1;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (quote == '"' && c == '\\') {
      ++i;
    } else if (c == quote) {
      if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;
        continue;
      }
      break;
    } else if (c == '\n') {
      ++lines;
      keys = keys || key_like(i + 1);
    }
  }
  if (lines == 0 || !keys) return;
  std::string until =
      i >= text.size() ? "to the end of the file"
                       : fmt::format("over {} lines, to a quote on line {}", lines + 1, m.line + 1 + lines);
  throw InputError({file, m.line + 1, m.column + 1}, path,
                   fmt::format("this quoted value runs {} and takes in lines that read like keys: is its "
                               "closing quote missing?",
                               until));
}

// yaml-cpp 0.7 never returns (allocating without end) from some text with a comma outside brackets where a
// node starts or after a flow collection or quoted scalar: `{a: 1},` as a document, the same after a
// top-level scalar and a comment, `,` alone, `- a` then `,` on the next line (found by tests/fuzz). Such a
// comma is never valid YAML (outside brackets a complete flow node is followed by `:`, a line break or a
// comment, and no plain scalar starts with a comma), so it is refused here, before yaml-cpp sees the text.
// The scan follows what decides it: comments, quoted scalars and brackets that start a node (after a line
// start, `: `, `- `, `? ` or inside brackets), and block scalars (`|`, `>`) whose more indented lines it
// skips; a plain scalar's commas (`x: a, b`) are not after a closed node.
void check_comma_after_flow_node(const std::string& text, const std::string& file) {
  const size_t n = text.size();
  auto fail_at = [&](size_t i) {
    size_t line_start = text.rfind('\n', i == 0 ? 0 : i - 1);
    line_start = line_start == std::string::npos || i == 0 ? 0 : line_start + 1;
    int line =
        1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(i), '\n'));
    throw InputError(
        {file, line, static_cast<int>(i - line_start) + 1}, "",
        "YAML syntax error: a comma outside brackets where a value starts or after a complete [..], {..} "
        "or quoted value (a list is [a, b] or one `- item` per line)");
  };
  int depth = 0;        // brackets open
  bool closed = false;  // at depth 0: a flow node or quoted scalar ended, only blanks or comments since
  char last = '\n';     // the last significant character on this line ('\n' at its start)
  size_t indent = 0;    // this line's indentation
  size_t block_indent = SIZE_MAX;  // inside a block scalar: lines indented more than this are its text
  for (size_t i = 0; i < n;) {
    char c = text[i];
    if (c == '\n') {
      ++i;
      last = '\n';
      indent = 0;
      while (i < n && text[i] == ' ') {
        ++i;
        ++indent;
      }
      if (block_indent != SIZE_MAX) {
        if (i < n && text[i] != '\n' && text[i] != '\r' && indent <= block_indent) {
          block_indent = SIZE_MAX;  // the block scalar ended
        } else {
          while (i < n && text[i] != '\n') ++i;  // its text (or a blank line)
        }
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    const bool node_start =
        depth > 0 ? last == '\n' || last == '[' || last == '{' || last == ',' || last == ':' || last == '?'
                  : last == '\n' || last == ':' || last == '-' || last == '?';
    if (c == '#' && (i == 0 || std::isspace(static_cast<unsigned char>(text[i - 1])))) {
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    if ((c == '"' || c == '\'') && node_start) {
      ++i;
      while (i < n) {
        char q = text[i++];
        if (c == '"' && q == '\\') {
          ++i;
        } else if (q == c) {
          if (c == '\'' && i < n && text[i] == '\'') {
            ++i;
            continue;
          }
          break;
        }
      }
      last = c;
      closed = depth == 0;
      continue;
    }
    if ((c == '[' || c == '{') && (depth > 0 || node_start)) {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      closed = --depth == 0;
      last = c;
      ++i;
      continue;
    } else if (c == ',' && depth == 0 && (closed || node_start)) {
      fail_at(i);
    } else if ((c == '|' || c == '>') && depth == 0 && node_start) {
      size_t j = i + 1;  // a block scalar's header: indicators, then a comment or the line's end
      while (j < n && (text[j] == '-' || text[j] == '+' || std::isdigit(static_cast<unsigned char>(text[j]))))
        ++j;
      while (j < n && (text[j] == ' ' || text[j] == '\t')) ++j;
      if (j == n || text[j] == '\n' || text[j] == '\r' || text[j] == '#') {
        block_indent = indent;
        while (i < n && text[i] != '\n') ++i;
        continue;
      }
    }
    if (depth == 0) closed = false;
    last = c;
    ++i;
  }
}

void check_unique_keys(const YAML::Node& root, const std::string& text, const std::string& file) {
  std::vector<std::pair<YAML::Node, std::string>> stack = {{root, ""}};
  std::set<std::pair<int, int>> seen;
  while (!stack.empty()) {
    auto [n, path] = stack.back();
    stack.pop_back();
    check_quoted(n, text, file, path);
    if (!n.IsMap() && !n.IsSequence()) continue;
    if (!seen.insert({n.Mark().line, n.Mark().column}).second) continue;
    if (n.IsSequence()) {
      for (size_t i = 0; i < n.size(); ++i) stack.push_back({n[i], fmt::format("{}[{}]", path, i)});
      continue;
    }
    std::set<std::string> keys;
    for (const auto& kv : n) {
      std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (!keys.insert(key).second)
        throw InputError({file, kv.first.Mark().line + 1, kv.first.Mark().column + 1}, join_path(path, key),
                         "duplicate key (the first one would silently win)");
      stack.push_back({kv.second, join_path(path, key)});
    }
  }
}

// yaml-cpp 0.7 never returns from some malformed text, allocating about 1 GB/s (fuzzing found several shapes
// besides the commas refused above). So the text is parsed first in a child process with a deadline (1 s and
// 0.5 s per MB); a child that does not finish is killed and the file refused, the machine's memory spared.
// The parse this process uses is the same, so it finishes too. Without fork (it failed) the text is parsed
// directly.
void check_parser_finishes(const std::string& text, const std::string& file) {
  const unsigned deadline_s = 1 + static_cast<unsigned>(text.size() / 2'000'000);
  pid_t child = fork();
  if (child < 0) return;
  if (child == 0) {
    alarm(deadline_s);  // SIGALRM ends the child
    try {
      YAML::LoadAll(text);
    } catch (...) {
    }
    _exit(0);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR) return;
  if (WIFEXITED(status)) return;
  throw InputError({file, 1, 1}, "",
                   fmt::format("YAML syntax error: the YAML parser (yaml-cpp) did not finish within {} s (it "
                               "never does on some malformed YAML): check the brackets, quotes, commas and "
                               "indentation",
                               deadline_s));
}

}  // namespace

YamlNode YamlNode::load_file(const std::string& path) {
  return load_string(read_input_file(path), path);
}

YamlNode YamlNode::load_string(const std::string& text, const std::string& name) {
  check_comma_after_flow_node(text, name);
  check_parser_finishes(text, name);
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(text);
    if (docs.size() > 1)
      throw InputError({name, docs[1].Mark().line + 1, docs[1].Mark().column + 1}, "",
                       "a second YAML document: a file holds one (it would be ignored)");
    YAML::Node doc = docs.empty() ? YAML::Node() : docs[0];
    check_unique_keys(doc, text, name);
    return YamlNode(make_impl(doc, name), "");
  } catch (const YAML::Exception& e) {
    throw InputError({name, e.mark.line + 1, e.mark.column + 1}, "", "YAML syntax error: " + e.msg);
  }
}

void YamlNode::apply_override(const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError({"--set", 0, 0}, "", fmt::format("expected dotted.key=value, got \"{}\"", assignment));
  check_utf8(assignment, "--set");
  std::string key = assignment.substr(0, eq);
  YAML::Node value;
  check_comma_after_flow_node(assignment.substr(eq + 1), "--set");
  check_parser_finishes(assignment.substr(eq + 1), "--set");
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw InputError({"--set", 0, 0}, key, "cannot parse value: " + e.msg);
  }
  // A map value's duplicate keys are refused as in a file (`{name: ps, servers: 1, servers: 2}`).
  try {
    check_unique_keys(value, assignment.substr(eq + 1), "--set");
  } catch (const InputError& e) {
    const std::string& inner = e.key_path();  // "[0].servers" below a list, "model" below a map
    throw InputError({"--set", 0, 0}, inner.starts_with('[') ? key + inner : join_path(key, inner),
                     e.message());
  }
  if (key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos)
    throw InputError({"--set", 0, 0}, key, "a key part is empty: parts are names separated by single dots");
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  // `jobs[0].placement` reads like an index but is a key here: list elements are dotted parts.
  if (auto open = key.find('['); open != std::string::npos && key.find(']', open) != std::string::npos) {
    std::string dotted;
    for (char c : key)
      if (c != ']') dotted.push_back(c == '[' ? '.' : c);
    throw InputError({"--set", 0, 0}, key,
                     fmt::format("list elements are addressed by a dotted index: --set {}=...", dotted));
  }
  // yaml-cpp's operator[] returns proxies: walk with an explicit chain of nodes.
  std::vector<YAML::Node> chain{impl_->node};
  // A list element is addressed by its index; a scalar has no keys to set.
  auto index = [&](const YAML::Node& list, const std::string& part) {
    size_t idx = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), idx);
    if (ec != std::errc() || end != part.data() + part.size() || idx >= list.size())
      throw InputError(
          {"--set", 0, 0}, key,
          fmt::format("\"{}\" is not an index of the list (it has {} elements)", part, list.size()));
    return idx;
  };
  auto no_scalar = [&](const YAML::Node& n, const std::string& part) {
    if (n.IsScalar())
      throw InputError({"--set", 0, 0}, key,
                       fmt::format("\"{}\" is inside the value \"{}\", which has no keys", part, n.Scalar()));
  };
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node cur = chain.back();
    no_scalar(cur, parts[i]);
    chain.push_back(cur.IsSequence() ? cur[index(cur, parts[i])] : cur[parts[i]]);
  }
  YAML::Node parent = chain.back();
  no_scalar(parent, parts.back());
  if (parent.IsSequence())
    parent[index(parent, parts.back())] = value;
  else
    parent[parts.back()] = value;
  impl_->overridden.push_back(key);
}

bool YamlNode::is_map() const {
  return impl_->node.IsMap();
}
bool YamlNode::is_sequence() const {
  return impl_->node.IsSequence();
}
bool YamlNode::is_scalar() const {
  return impl_->node.IsScalar();
}
bool YamlNode::is_null() const {
  return !impl_->node.IsDefined() || impl_->node.IsNull();
}
const std::string& YamlNode::file() const {
  return impl_->file;
}

// A value that came from --set has no place in the file: errors about it name the flag instead.
bool YamlNode::from_override(const std::string& key_path, bool maps_to_it) const {
  // Key paths write list elements as a[1].b, overrides as a.1.b.
  std::string path;
  for (char c : key_path)
    if (c == '[')
      path += '.';
    else if (c != ']')
      path += c;
  const Impl& root = impl_->root ? *impl_->root : *impl_;
  auto under = [](const std::string& a, const std::string& b) {  // a is b or inside it
    return a == b || (a.size() > b.size() && a.compare(0, b.size(), b) == 0 && a[b.size()] == '.');
  };
  for (const std::string& k : root.overridden)
    if (under(path, k) || (maps_to_it && under(k, path))) return true;
  return false;
}

SourceLocation YamlNode::location() const {
  if (from_override(path_)) return {"--set", 0, 0};
  YAML::Mark m = impl_->node.Mark();
  if (m.is_null()) return {impl_->file, 0, 0};
  return {impl_->file, m.line + 1, m.column + 1};
}

void YamlNode::fail(const std::string& message) const {
  throw InputError(location(), path_, message);
}

bool YamlNode::has(const std::string& key) const {
  return impl_->node.IsMap() && impl_->node[key].IsDefined() && !impl_->node[key].IsNull();
}

std::optional<YamlNode> YamlNode::get(const std::string& key) const {
  if (!impl_->node.IsMap()) fail("expected a map");
  YAML::Node child = impl_->node[key];
  if (!child.IsDefined() || child.IsNull()) return std::nullopt;
  auto impl = make_impl(child, impl_->file);
  impl->root = impl_->root ? impl_->root : impl_;
  return YamlNode(impl, join_path(path_, key));
}

YamlNode YamlNode::operator[](const std::string& key) const {
  auto child = get(key);
  if (!child) fail(fmt::format("missing required key \"{}\"", key));
  return *child;
}

std::vector<YamlNode> YamlNode::elements() const {
  if (!impl_->node.IsSequence()) fail("expected a list");
  std::vector<YamlNode> out;
  for (size_t i = 0; i < impl_->node.size(); ++i) {
    auto impl = make_impl(impl_->node[i], impl_->file);
    impl->root = impl_->root ? impl_->root : impl_;
    out.push_back(YamlNode(impl, fmt::format("{}[{}]", path_, i)));
  }
  return out;
}

namespace {

// A map key as text; a key that is itself a list or a map (YAML's `? [a, b]`) is an error at its place.
std::string key_text(const YAML::Node& key, const std::string& file, const std::string& path) {
  if (!key.IsScalar()) {
    YAML::Mark m = key.Mark();
    throw InputError({file, m.line + 1, m.column + 1}, path,
                     "a key must be a plain name, not a list or a map");
  }
  return key.Scalar();
}

}  // namespace

std::vector<std::string> YamlNode::keys() const {
  if (!impl_->node.IsMap()) fail("expected a map");
  std::vector<std::string> out;
  for (auto it = impl_->node.begin(); it != impl_->node.end(); ++it)
    out.push_back(key_text(it->first, impl_->file, path_));
  return out;
}

void YamlNode::expect_keys(std::initializer_list<const char*> allowed) const {
  expect_keys(std::vector<std::string>(allowed.begin(), allowed.end()));
}

void YamlNode::expect_keys(const std::vector<std::string>& allowed) const {
  if (!impl_->node.IsMap()) fail("expected a map");
  for (auto it = impl_->node.begin(); it != impl_->node.end(); ++it) {
    std::string key = key_text(it->first, impl_->file, path_);
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string hint = did_you_mean(key, allowed);
    YAML::Mark m = it->first.Mark();
    std::string path = join_path(path_, key);
    SourceLocation where = from_override(path, true) ? SourceLocation{"--set", 0, 0}
                                                     : SourceLocation{impl_->file, m.line + 1, m.column + 1};
    throw InputError(where, path,
                     hint.empty() ? fmt::format("unknown key (accepted: {})", fmt::join(allowed, ", "))
                                  : fmt::format("unknown key (did you mean \"{}\"?)", hint));
  }
}

std::string YamlNode::as_string() const {
  if (!impl_->node.IsScalar()) fail("expected a single value");
  return impl_->node.Scalar();
}

int64_t YamlNode::as_int() const {
  std::string s = as_string();
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) fail(fmt::format("expected an integer, got \"{}\"", s));
  return v;
}

double YamlNode::as_double() const {
  std::string s = as_string();
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) fail(fmt::format("expected a number, got \"{}\"", s));
  if (!std::isfinite(v)) fail(fmt::format("expected a finite number, got \"{}\"", s));
  return v;
}

double YamlNode::as_fraction() const {
  return parse_value([](const std::string& s) { return parse_fraction(s); });
}

bool YamlNode::as_bool() const {
  std::string s = as_string();
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  fail(fmt::format("expected true or false, got \"{}\"", s));
}

Time YamlNode::as_time() const {
  return parse_value([](const std::string& s) { return parse_time(s); });
}
Bytes YamlNode::as_bytes() const {
  return parse_value([](const std::string& s) { return parse_bytes(s); });
}
Rate YamlNode::as_rate() const {
  return parse_value([](const std::string& s) { return parse_rate(s); });
}
Flops YamlNode::as_flops() const {
  return parse_value([](const std::string& s) { return parse_flops(s); });
}
FlopRate YamlNode::as_flop_rate() const {
  return parse_value([](const std::string& s) { return parse_flop_rate(s); });
}

std::vector<int64_t> YamlNode::as_int_list() const {
  if (is_sequence()) {
    std::vector<int64_t> out;
    for (const YamlNode& e : elements()) out.push_back(e.as_int());
    return out;
  }
  return {as_int()};
}

std::string YamlNode::get_string(const std::string& key, const std::string& def) const {
  auto c = get(key);
  return c ? c->as_string() : def;
}
int64_t YamlNode::get_int(const std::string& key, int64_t def) const {
  auto c = get(key);
  return c ? c->as_int() : def;
}
double YamlNode::get_double(const std::string& key, double def) const {
  auto c = get(key);
  return c ? c->as_double() : def;
}
bool YamlNode::get_bool(const std::string& key, bool def) const {
  auto c = get(key);
  return c ? c->as_bool() : def;
}

std::string YamlNode::dump() const {
  YAML::Emitter out;
  out << YAML::Flow << impl_->node;
  return out.c_str();
}

}  // namespace ddlsim
