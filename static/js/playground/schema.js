// Checks a parsed value against a JSON Schema, in the browser, for the run pane's
// validation status. It covers the keywords structured output enforces (types,
// properties, required, additionalProperties, items, enum, const, bounds, lengths,
// pattern, anyOf / oneOf / allOf, local $ref); a keyword it does not know is
// reported as not checked, never silently passed.

const KNOWN = new Set(["type", "properties", "required", "additionalProperties", "items", "prefixItems",
  "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
  "minItems", "maxItems", "pattern", "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions",
  "title", "description", "default", "examples", "$schema", "$id", "$comment"]);

function typeOf(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v; // string, boolean, object
}

function hasType(v, t) {
  const actual = typeOf(v);
  return actual === t || (t === "number" && actual === "integer");
}

function resolve(root, ref) {
  if (!ref.startsWith("#/")) return null;
  let node = root;
  for (const part of ref.slice(2).split("/")) {
    node = node && node[part.replace(/~1/g, "/").replace(/~0/g, "~")];
  }
  return node || null;
}

// Returns { errors: [{path, message}], unchecked: [keyword...] }.
export function validate(schema, value) {
  const errors = [];
  const unchecked = new Set();
  const walk = (s, v, path, depth) => {
    if (s === true || s === undefined) return;
    if (s === false) { errors.push({ path, message: "no value is allowed here" }); return; }
    if (depth > 64) { unchecked.add("(nesting deeper than 64)"); return; }
    for (const k of Object.keys(s)) if (!KNOWN.has(k)) unchecked.add(k);
    const fail = (message) => errors.push({ path, message });
    if (s.$ref !== undefined) {
      const target = resolve(schema, s.$ref);
      if (target === null) unchecked.add(`$ref ${s.$ref}`); else walk(target, v, path, depth + 1);
    }
    if (s.type !== undefined) {
      const types = Array.isArray(s.type) ? s.type : [s.type];
      if (!types.some((t) => hasType(v, t))) {
        fail(`expected ${types.join(" or ")}, got ${typeOf(v)}`);
        return; // the other keywords would only repeat it
      }
    }
    if (s.enum !== undefined && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) {
      fail(`must be one of ${s.enum.map((e) => JSON.stringify(e)).join(", ")}`);
    }
    if (s.const !== undefined && JSON.stringify(s.const) !== JSON.stringify(v)) {
      fail(`must be ${JSON.stringify(s.const)}`);
    }
    if (typeof v === "number") {
      if (s.minimum !== undefined && v < s.minimum) fail(`must be >= ${s.minimum}`);
      if (s.maximum !== undefined && v > s.maximum) fail(`must be <= ${s.maximum}`);
      if (s.exclusiveMinimum !== undefined && v <= s.exclusiveMinimum) fail(`must be > ${s.exclusiveMinimum}`);
      if (s.exclusiveMaximum !== undefined && v >= s.exclusiveMaximum) fail(`must be < ${s.exclusiveMaximum}`);
    }
    if (typeof v === "string") {
      const length = [...v].length; // code points, as JSON Schema counts
      if (s.minLength !== undefined && length < s.minLength) fail(`must be at least ${s.minLength} characters`);
      if (s.maxLength !== undefined && length > s.maxLength) fail(`must be at most ${s.maxLength} characters`);
      if (s.pattern !== undefined) {
        try {
          if (!new RegExp(s.pattern, "u").test(v)) fail(`must match ${s.pattern}`);
        } catch { unchecked.add(`pattern ${s.pattern}`); }
      }
    }
    if (Array.isArray(v)) {
      if (s.minItems !== undefined && v.length < s.minItems) fail(`must have at least ${s.minItems} items`);
      if (s.maxItems !== undefined && v.length > s.maxItems) fail(`must have at most ${s.maxItems} items`);
      const prefix = s.prefixItems || [];
      v.forEach((item, i) => walk(i < prefix.length ? prefix[i] : s.items, item, `${path}/${i}`, depth + 1));
    }
    if (typeOf(v) === "object") {
      for (const name of s.required || []) if (!(name in v)) fail(`missing required property '${name}'`);
      const props = s.properties || {};
      for (const [name, item] of Object.entries(v)) {
        if (name in props) walk(props[name], item, `${path}/${name}`, depth + 1);
        else if (s.additionalProperties === false) fail(`unexpected property '${name}'`);
        else if (typeof s.additionalProperties === "object") {
          walk(s.additionalProperties, item, `${path}/${name}`, depth + 1);
        }
      }
    }
    const passes = (sub) => {
      const before = errors.length;
      walk(sub, v, path, depth + 1);
      const ok = errors.length === before;
      errors.length = before;
      return ok;
    };
    if (s.allOf) s.allOf.forEach((sub) => walk(sub, v, path, depth + 1));
    if (s.anyOf && !s.anyOf.some(passes)) fail("matches none of anyOf");
    if (s.oneOf && s.oneOf.filter(passes).length !== 1) fail("must match exactly one of oneOf");
  };
  walk(schema, value, "", 0);
  return { errors, unchecked: [...unchecked] };
}
