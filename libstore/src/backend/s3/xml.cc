// SPDX-License-Identifier: Apache-2.0
// S3's XML answers through expat (xml.h).
#include "backend/s3/xml.h"

#include <expat.h>

#include <memory>

namespace chunkstore::internal {

const XmlElement* XmlElement::Child(const std::string& n) const {
  for (const XmlElement& c : children)
    if (c.name == n) return &c;
  return nullptr;
}

std::string XmlElement::ChildText(const std::string& n) const {
  const XmlElement* c = Child(n);
  return c ? c->text : std::string();
}

namespace {

// The elements open while parsing, innermost last.
struct Builder {
  XmlElement root;
  std::vector<XmlElement*> open;
  bool have_root = false;
  // Deeper than any S3 answer nests: a bound, not a need.
  static constexpr size_t kMaxDepth = 64;
  bool too_deep = false;
};

void OnStart(void* user, const XML_Char* name, const XML_Char**) {
  auto* b = static_cast<Builder*>(user);
  if (b->open.size() >= Builder::kMaxDepth) {
    b->too_deep = true;
    return;
  }
  if (b->open.empty()) {
    if (b->have_root) return;  // expat refuses a second root anyway
    b->have_root = true;
    b->root.name = name;
    b->open.push_back(&b->root);
    return;
  }
  XmlElement& parent = *b->open.back();
  parent.children.push_back(XmlElement{name, {}, {}});
  b->open.push_back(&parent.children.back());
}

void OnEnd(void* user, const XML_Char*) {
  auto* b = static_cast<Builder*>(user);
  if (!b->open.empty() && !b->too_deep) b->open.pop_back();
}

void OnText(void* user, const XML_Char* s, int len) {
  auto* b = static_cast<Builder*>(user);
  if (!b->open.empty() && !b->too_deep) b->open.back()->text.append(s, static_cast<size_t>(len));
}

}  // namespace

Result<XmlElement> ParseXml(const std::string& xml) {
  std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> p(XML_ParserCreate("UTF-8"), XML_ParserFree);
  if (!p) return Status::IOError("cannot start an XML parser: out of memory");
  Builder b;
  // The open elements are held by address. A new child goes into its
  // parent's vector, which may move the parent's earlier children, but
  // those are closed already; the parent and its ancestors sit in vectors
  // nothing is added to while they are open.
  XML_SetUserData(p.get(), &b);
  XML_SetElementHandler(p.get(), OnStart, OnEnd);
  XML_SetCharacterDataHandler(p.get(), OnText);
  if (XML_Parse(p.get(), xml.data(), static_cast<int>(xml.size()), XML_TRUE) == XML_STATUS_ERROR)
    return Status::Corruption(std::string("malformed XML from the server: ") + XML_ErrorString(XML_GetErrorCode(p.get())) +
                              " at line " + std::to_string(XML_GetCurrentLineNumber(p.get())));
  if (b.too_deep) return Status::Corruption("XML from the server nests too deep");
  if (!b.have_root) return Status::Corruption("XML from the server has no element");
  return std::move(b.root);
}

}  // namespace chunkstore::internal
