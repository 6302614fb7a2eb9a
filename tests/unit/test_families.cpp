// The registry of model families (model/families/) against docs/checkpoints.md's table of them:
// every family has its row, naming its model_type and the config.json keys it documents, and every
// row's model_type is a family's. A family added without its row fails here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attn/model/families/registry.hpp"

using attn::model::ModelFamily;

namespace {

struct Row {
  std::string line, name, types, keys;
};

// The table whose header begins "| architecture | `model_type` | config.json keys read |".
std::vector<Row> family_rows(const std::string& text) {
  std::istringstream in(text);
  std::vector<Row> rows;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.starts_with("| architecture | `model_type` | config.json keys read |")) {
      inside = true;
      std::getline(in, line);  // the |---| line
      continue;
    }
    if (!inside) continue;
    if (!line.starts_with("|")) break;
    std::vector<std::string> cells;
    std::size_t from = 1;
    for (std::size_t bar = line.find('|', from); bar != std::string::npos; from = bar + 1, bar = line.find('|', from)) {
      cells.push_back(line.substr(from, bar - from));
    }
    REQUIRE(cells.size() == 4);
    rows.push_back({line, cells[0].substr(1, cells[0].size() - 2), cells[1], cells[2]});
  }
  return rows;
}

// The `quoted` words of a cell, in order.
std::vector<std::string> quoted(const std::string& cell) {
  static const std::regex word("`([^`]+)`");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), word); it != std::sregex_iterator(); ++it) out.push_back((*it)[1]);
  return out;
}

bool has(const std::vector<std::string_view>& list, const std::string& s) { return std::find(list.begin(), list.end(), s) != list.end(); }

std::string checkpoints_doc() {
  std::ifstream f(std::filesystem::path(ATTN_SOURCE_DIR) / "docs" / "checkpoints.md");
  REQUIRE(f);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("families: each has one model_type of its own, found by it") {
  const auto& all = attn::model::model_families();
  REQUIRE(all.size() >= 16);  // the families docs/checkpoints.md lists
  std::set<std::string_view> types;
  for (const ModelFamily* f : all) {
    CHECK(types.insert(f->model_type).second);
    CHECK(attn::model::find_family(f->model_type) == f);
    CHECK(!f->name.empty());
    CHECK(has(f->keys, "model_type"));  // each reader reads it
  }
  CHECK(attn::model::find_family("gpt3") == nullptr);
  // the features the model code asks for, as each family's file states them
  CHECK(attn::model::find_family("qwen2")->qkv_bias);
  CHECK(attn::model::find_family("qwen3")->qk_norm == attn::model::QkNorm::PerHead);
  CHECK(attn::model::find_family("olmo2")->block == attn::model::Block::PostNorm);
  CHECK(attn::model::find_family("gemma3")->prefixes[0] == "language_model.model.");
  CHECK(attn::model::find_family("t5")->positions == attn::model::family::Positions::RelativeBias);
}

TEST_CASE("families: docs/checkpoints.md has a row for every family") {
  const std::vector<Row> rows = family_rows(checkpoints_doc());
  REQUIRE(rows.size() >= 10);
  const auto& all = attn::model::model_families();
  for (const ModelFamily* f : all) {
    const std::string type(f->model_type);
    INFO("model_type " << type);
    std::vector<const Row*> found;
    for (const Row& r : rows) {
      const auto q = quoted(r.types);
      if (std::find(q.begin(), q.end(), type) != q.end()) found.push_back(&r);
    }
    REQUIRE(found.size() == 1);  // a family without its row: add it to docs/checkpoints.md's table
    const Row& row = *found.front();
    INFO(row.line);
    CHECK(row.name.starts_with(f->name));
    auto keys = quoted(row.keys);  // (a multimodal family names its text_config beside its model_type)
    for (const auto& w : quoted(row.types)) keys.push_back(w);
    for (const std::string_view key : f->doc_keys) {
      INFO("key " << key);
      CHECK((has(f->keys, std::string(key)) || has(f->no_effect, std::string(key)) || has(f->refused, std::string(key))));
      CHECK(std::find(keys.begin(), keys.end(), std::string(key)) != keys.end());
    }
  }
}

TEST_CASE("families: every row of docs/checkpoints.md's table is a family's") {
  // its model_type column names registered model types (and their own keys or tensor prefixes, as
  // Gemma 3's text_config and language_model.model.)
  const std::vector<Row> rows = family_rows(checkpoints_doc());
  const auto& all = attn::model::model_families();
  for (const Row& r : rows) {
    INFO(r.line);
    const auto q = quoted(r.types);
    REQUIRE(!q.empty());
    const ModelFamily* first = attn::model::find_family(q.front());
    REQUIRE(first != nullptr);
    for (const std::string& word : q) {
      bool known = false;
      for (const ModelFamily* f : all) {
        const bool in_row = std::find(q.begin(), q.end(), std::string(f->model_type)) != q.end();
        known = known || f->model_type == word ||
                (in_row && (has(f->keys, word) || f->prefixes[0] == word || f->prefixes[1] == word));
      }
      INFO("word " << word);
      CHECK(known);
    }
  }
}
