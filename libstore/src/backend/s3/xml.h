// SPDX-License-Identifier: Apache-2.0
// The XML of S3's answers (listings, uploads, errors), parsed with expat
// into a small tree of elements: names, text (entities decoded, CDATA
// included) and children. Only what S3 sends is needed; nothing is
// fetched from outside the document (no external entities, no DTD), and
// expat's own guard against entity amplification applies.
#pragma once

#include <string>
#include <vector>

#include "chunkstore/status.h"

namespace chunkstore::internal {

struct XmlElement {
  std::string name;  // as written, without namespace processing
  std::string text;  // the element's own character data
  std::vector<XmlElement> children;

  // The first child of that name, or nullptr.
  const XmlElement* Child(const std::string& n) const;
  // Its text, or "" when there is no such child.
  std::string ChildText(const std::string& n) const;
};

// The document's root element; Corruption for anything that is not
// well-formed XML (with expat's message and line).
Result<XmlElement> ParseXml(const std::string& xml);

}  // namespace chunkstore::internal
