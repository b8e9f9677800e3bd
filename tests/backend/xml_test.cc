// SPDX-License-Identifier: Apache-2.0
// S3's XML answers through expat (backend/s3/xml.h): listings with keys
// that need escaping, errors, and what is not XML.
#include <gtest/gtest.h>

#include "backend/s3/xml.h"

namespace chunkstore {
namespace {

using internal::ParseXml;

TEST(Xml, AListingWithEscapedKeysAndANamespace) {
  const std::string body =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Name>b</Name><IsTruncated>true</IsTruncated>"
      "<NextContinuationToken>t&amp;1</NextContinuationToken>"
      "<Contents><Key>p/log/a&amp;b&lt;c&gt;&#x263A;</Key><Size>12</Size>"
      "<LastModified>2026-11-30T13:31:43.705Z</LastModified></Contents>"
      "<Contents><Key><![CDATA[p/x<y]]></Key><Size>0</Size></Contents>"
      "</ListBucketResult>";
  auto doc = ParseXml(body);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->name, "ListBucketResult");
  EXPECT_EQ(doc->ChildText("IsTruncated"), "true");
  EXPECT_EQ(doc->ChildText("NextContinuationToken"), "t&1");
  std::vector<std::string> keys;
  for (const auto& c : doc->children)
    if (c.name == "Contents") keys.push_back(c.ChildText("Key"));
  EXPECT_EQ(keys, (std::vector<std::string>{"p/log/a&b<c>\xe2\x98\xba", "p/x<y"}));
  EXPECT_EQ(doc->ChildText("Missing"), "");
  EXPECT_EQ(doc->Child("Missing"), nullptr);
}

TEST(Xml, AnErrorBody) {
  auto doc = ParseXml("<Error><Code>NoSuchKey</Code><Message>The resource you requested does not exist</Message></Error>");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->ChildText("Code"), "NoSuchKey");
}

TEST(Xml, WhatIsNotXmlIsRefused) {
  for (const std::string& bad : std::vector<std::string>{"", "<html><body>502 Bad Gateway</body>", "<a><b></a></b>", "plain text",
                                "<a>&undefined;</a>", std::string(100, '<')}) {
    EXPECT_TRUE(ParseXml(bad).status().IsCorruption()) << bad;
  }
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "<a>";
  for (int i = 0; i < 200; ++i) deep += "</a>";
  EXPECT_TRUE(ParseXml(deep).status().IsCorruption());
  // Entity amplification stops at expat's guard instead of filling memory.
  std::string laughs;
  laughs = "<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a0 \"ha\">";
  for (int i = 1; i < 12; ++i) {
    laughs += "<!ENTITY a" + std::to_string(i) + " \"";
    for (int k = 0; k < 10; ++k) laughs += "&a" + std::to_string(i - 1) + ";";
    laughs += "\">";
  }
  laughs += "]><l>&a11;</l>";
  EXPECT_FALSE(ParseXml(laughs).ok());
}

}  // namespace
}  // namespace chunkstore
