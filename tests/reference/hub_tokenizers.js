// The references for hub_tokenizer_check.py, under node: a directory's tokenizer.json (and
// tokenizer_config.json) read by an independent implementation, each text of a JSON array on
// standard input encoded twice: without special tokens, and with the implementation's defaults.
//
//   node hub_tokenizers.js lenml PKG DIR   @lenml/tokenizers (transformers.js's tokenizers) at PKG
//   node hub_tokenizers.js hf PKG DIR      the tokenizers package (HF's Rust library, its Node binding) at PKG
//
// Writes {"plain": [[ids], ...], "defaults": [[ids], ...]}.
const fs = require("fs");
const path = require("path");

const [kind, pkg, dir] = process.argv.slice(2);
const texts = JSON.parse(fs.readFileSync(0, "utf-8"));

async function main() {
  const plain = [], defaults = [];
  if (kind === "lenml") {
    const { TokenizerLoader } = require(path.resolve(pkg));
    const read = (name) => JSON.parse(fs.readFileSync(path.join(dir, name), "utf-8"));
    const config = fs.existsSync(path.join(dir, "tokenizer_config.json")) ? read("tokenizer_config.json") : {};
    const tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON: read("tokenizer.json"), tokenizerConfig: config });
    for (const t of texts) {
      plain.push(tokenizer.encode(t, { add_special_tokens: false }));
      defaults.push(tokenizer.encode(t));
    }
  } else if (kind === "hf") {
    const { Tokenizer } = require(path.resolve(pkg));
    const tokenizer = Tokenizer.fromFile(path.join(dir, "tokenizer.json"));
    for (const t of texts) {
      plain.push((await tokenizer.encode(t, null, { addSpecialTokens: false })).getIds());
      defaults.push((await tokenizer.encode(t)).getIds());
    }
  } else {
    throw new Error(`unknown reference ${kind}: expected lenml or hf`);
  }
  process.stdout.write(JSON.stringify({ plain, defaults }));
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + "\n");
  process.exit(1);
});
