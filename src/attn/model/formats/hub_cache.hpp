// A model by its hub id ("meta-llama/Llama-3.2-1B") in the model hub's local cache, as the hub's
// client lays it out: <cache>/models--org--name/refs/<revision> holds a commit hash, and
// snapshots/<hash>/ holds the files (symlinks into blobs/). Nothing is downloaded.
#pragma once

#include <string>

namespace attn::model {

// The cache attn searches: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub, and which
// of those chose it ("HF_HUB_CACHE", "HF_HOME", "HOME").
struct HubCache {
  std::string dir, chosen_by;
};
HubCache hub_cache();

// The snapshot directory of `model` ("org/name") at `revision` (a branch or tag under refs/, or a
// commit hash with a snapshot). InputError, naming `where` (the JSON path or argument), the id and the
// directories searched, when the id is malformed or the model or revision is not cached.
std::string find_in_hub_cache(const std::string& model, const std::string& revision, const std::string& where);

// "org/name" as the hub writes ids: two non-empty parts, no other slash, not "." or "..".
bool looks_like_hub_id(const std::string& s);

}  // namespace attn::model
