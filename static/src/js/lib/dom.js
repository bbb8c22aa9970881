// el makes a tag with attributes ("class", "text", "on<event>" handlers;
// null, undefined and false left out) and children (nodes or text; null
// and false left out).
export function el(tag, attrs, children) {
  const e = document.createElement(tag);
  Object.keys(attrs || {}).forEach(function (k) {
    const v = attrs[k];
    if (v === null || v === undefined || v === false) return;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  });
  (children || []).forEach(function (c) {
    if (c) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  });
  return e;
}
