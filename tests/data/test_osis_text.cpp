#include "tfm/data/osis_text.h"

#include <gtest/gtest.h>

#include "support/test_util.h"

namespace tfm {
namespace {

using tfm::testing::error_of;

std::string text(std::string_view osis) {
  OsisStats stats;
  return osis_verse_text(osis, stats);
}

// Each element kind of the table in osis_text.h, in the shapes the modules write it.

TEST(OsisText, WordsAndAddedWordsAreText) {
  EXPECT_EQ(text("<w lemma=\"strong:H7225\">EN el principio</w> <w lemma=\"strong:H1254\">"
                 "crió</w> <w lemma=\"strong:H0430\">Dios</w>."),
            "EN el principio crió Dios.");
  EXPECT_EQ(text("las aguas que <transChange type=\"added\">están</transChange> <w>debajo</w>"),
            "las aguas que están debajo");
  EXPECT_EQ(text("<divineName>Yahweh</divineName> <hi type=\"italic\">is</hi> "
                 "<foreign>Elohim</foreign>, <name type=\"x-usfm-bk\">The Book</name>"),
            "Yahweh is Elohim, The Book");
}

TEST(OsisText, NotesAndTheirReferencesAreRemoved) {
  EXPECT_EQ(text("<w>Bdellium</w><note placement=\"foot\"><reference type=\"annotateRef\">2:12 "
                 "</reference>or, aromatic resin</note> <w>and</w> onyx"),
            "Bdellium and onyx");
  EXPECT_EQ(text("sin.<note type=\"crossReference\"><reference osisRef=\"Gen.1.1\">Genesis "
                 "1:1</reference>; <reference>Isaiah 2:3</reference></note>"),
            "sin.");
  EXPECT_EQ(text("judge<note>Hebrew <catchWord>He</catchWord> <rdg type=\"alternate\">x"
                 "</rdg></note>."),
            "judge.");
}

// The case `diatheke -f plain` gets wrong ("Godcreated"): a note between two words.
TEST(OsisText, ANoteBetweenTwoWordsLeavesASpace) {
  EXPECT_EQ(text("<w lemma=\"strong:H0430\">God</w><note placement=\"foot\"><reference "
                 "type=\"annotateRef\">1:1 </reference>The Hebrew word rendered “God” is "
                 "“אֱלֹהִ֑ים” (Elohim).</note><w lemma=\"strong:H1254\">created</w> the heavens"),
            "God created the heavens");
  EXPECT_EQ(text("She conceived,<note>or, became pregnant</note>and gave birth"),
            "She conceived, and gave birth");
  // ... but no space before closing punctuation or after an opening mark.
  EXPECT_EQ(text("twenty gerahs<note>x</note>); half"), "twenty gerahs); half");
  EXPECT_EQ(text("your offspring.<note>x</note>” He built"), "your offspring.” He built");
  EXPECT_EQ(text("“To descendants<note>x</note>”, as of many"), "“To descendants”, as of many");
  EXPECT_EQ(text("He said,<note>x</note>“A forest"), "He said, “A forest");
  EXPECT_EQ(text("(<note>x</note>which"), "(which");
  EXPECT_EQ(text("forever<note>x</note>—” and"), "forever—” and");
  // A note at either end leaves nothing.
  EXPECT_EQ(text("<note>x</note>Amen.<note>y</note>"), "Amen.");
}

TEST(OsisText, WordElementsNextToAddedWordsAreSeparateWords) {
  // The Reina-Valera module lost the spaces around some added words.
  EXPECT_EQ(text("<w>hay allí</w><transChange type=\"added\">también</transChange><w>bdelio</w>"),
            "hay allí también bdelio");
  // An added ending inside a word stays in the word.
  EXPECT_EQ(text("<w>al pythón</w>, preguntándo<transChange type=\"added\">le</transChange>,"),
            "al pythón, preguntándole,");
  EXPECT_EQ(text("<w>God</w>’s <w>Spirit</w>"), "God’s Spirit");
  EXPECT_EQ(text("“<w>Let</w> <w>there</w>"), "“Let there");
  EXPECT_EQ(text("<w>seventy</w>-<w>seven</w>"), "seventy-seven");
}

TEST(OsisText, HeadingsAndSpeakersAreRemovedAPsalmsSuperscriptionIsKept) {
  EXPECT_EQ(text("<title type=\"x-introduction\">Why?</title> <title level=\"1\" "
                 "type=\"main\">Genesis</title>In the beginning"),
            "In the beginning");
  EXPECT_EQ(text("<div type=\"x-milestone\" subType=\"x-preverse\" sID=\"pv1\"/><title "
                 "canonical=\"true\" type=\"psalm\">A Psalm by David.</title> <lg sID=\"a\"/> <l "
                 "level=\"1\" sID=\"b\"/><div type=\"x-milestone\" subType=\"x-preverse\" "
                 "eID=\"pv1\"/>Yahweh, how my adversaries have increased!<l eID=\"b\" "
                 "level=\"1\"/>"),
            "A Psalm by David. Yahweh, how my adversaries have increased!");
  EXPECT_EQ(text("<title canonical=\"true\" type=\"psalm\"> HE </title> <lg sID=\"g\"/>Teach me"),
            "HE Teach me");
  EXPECT_EQ(text("<speaker>Beloved</speaker> <lg sID=\"g\"/> <l level=\"1\" sID=\"h\"/>Let him "
                 "kiss me<l eID=\"h\" level=\"1\"/>"),
            "Let him kiss me");
  EXPECT_EQ(text("<head>Psalm 1</head>Blessed"), "Blessed");
}

TEST(OsisText, NonScriptureDivsAreRemovedInBothForms) {
  // Revelation 22:21 of the WEB: the verse, the book's end, then the whole glossary.
  EXPECT_EQ(text("saints. Amen.  <chapter eID=\"Rev.22\"/><div eID=\"g1\" type=\"x-p\"/> <div "
                 "canonical=\"true\" eID=\"g2\" osisID=\"Rev\" type=\"book\"/> <div sID=\"g3\" "
                 "type=\"glossary\"/> <milestone n=\"Glossary\" type=\"x-usfm-h\"/> <title>WEB "
                 "Glossary</title> <list> <item><seg type=\"keyword\">Abba</seg> Abba is a word "
                 "for father.</item> </list> <div eID=\"g3\" type=\"glossary\"/>"),
            "saints. Amen.");
  EXPECT_EQ(text("<div type=\"introduction\"><p>About this book.</p></div>In the beginning"),
            "In the beginning");
  EXPECT_EQ(text("<div type=\"section\"><p>In the beginning</p></div>"), "In the beginning");
}

TEST(OsisText, PoetryListsQuotesAndMarkersAreText) {
  EXPECT_EQ(text("to the serpent,<div eID=\"g47\" type=\"x-p\"/> <lg sID=\"g48\"/> <l "
                 "level=\"1\" sID=\"g49\"/>“Because you have done this,<l eID=\"g49\" "
                 "level=\"1\"/> <l level=\"2\" sID=\"g50\"/>you are cursed<l eID=\"g50\" "
                 "level=\"2\"/>"),
            "to the serpent, “Because you have done this, you are cursed");
  EXPECT_EQ(text("refuge.<l eID=\"a\"/> <l sID=\"b\" type=\"selah\"/>Selah.<l eID=\"b\" "
                 "type=\"selah\"/><lb type=\"x-p\"/>"),
            "refuge. Selah.");
  EXPECT_EQ(text("<list> <item type=\"x-indent-1\">Of Phinehas, Gershom.</item> <item>Of "
                 "Ithamar, Daniel.</item>"),
            "Of Phinehas, Gershom. Of Ithamar, Daniel.");
  EXPECT_EQ(text("said to him, <q marker=\"\" who=\"Jesus\">“Allow it now.”</q>"),
            "said to him, “Allow it now.”");
  // Revelation 1:8: a quotation's closing mark in its own q, the next word glued to it.
  EXPECT_EQ(text("<q who=\"Jesus\">“I am the Omega,</q><note>TR adds</note><q who=\"Jesus\">”"
                 "</q>says the Lord"),
            "“I am the Omega,” says the Lord");
  EXPECT_EQ(text("<chapter n=\"1\" osisID=\"Gen.1\" sID=\"Gen.1\"/><milestone type=\"x-p\"/>"
                 "<verse osisID=\"Gen.1.1\" sID=\"v\"/>In<verse eID=\"v\"/>"),
            "In");
}

TEST(OsisText, WhitespaceEntitiesAndComments) {
  EXPECT_EQ(text("  a \n\t b\r\n c  "), "a b c");
  EXPECT_EQ(text("a\xC2\xA0"
                 "b"),
            "a b");  // no-break space
  EXPECT_EQ(text("Tom &amp; Jerry &lt;3 &gt; &quot;x&quot; &apos;y&apos; caf&#233; caf&#xE9;"),
            "Tom & Jerry <3 > \"x\" 'y' café café");
  EXPECT_EQ(text("a<!-- a <note> in a comment -->b"), "ab");  // a comment is no word boundary
  EXPECT_EQ(text("a <!-- c --> b"), "a b");
  EXPECT_EQ(text(""), "");
  EXPECT_EQ(text("<note>only a note</note>"), "");
}

TEST(OsisText, CountsElementsRemovedAndUnknown) {
  OsisStats stats;
  EXPECT_EQ(osis_verse_text("<w>a</w> <w>b</w><note>n</note> <zap x=\"1\">kept</zap> <l sID=\"1\"/>"
                            "c<l eID=\"1\"/> <div sID=\"i\" type=\"introduction\"/>d<div "
                            "eID=\"i\" type=\"introduction\"/>",
                            stats),
            "a b kept c");
  EXPECT_EQ(stats.elements["w"], 2);
  EXPECT_EQ(stats.elements["l"], 1);  // a milestone pair counts once
  EXPECT_EQ(stats.removed["note"], 1);
  EXPECT_EQ(stats.removed["div"], 1);
  EXPECT_EQ(stats.unknown["zap"], 1);
  EXPECT_EQ(stats.unknown.size(), 1u);
}

// SWORD cuts a list or a poem that spans verses between their entries.
TEST(OsisText, EndTagsOfTextElementsOpenedInAnEarlierVerseAreFine) {
  EXPECT_EQ(text("Zechariah.</item> </list>"), "Zechariah.");
  EXPECT_EQ(text("<list> <item>Of the sons of Parosh,"), "Of the sons of Parosh,");
}

TEST(OsisText, MalformedMarkupIsAnErrorWithItsPosition) {
  auto err = [](std::string_view osis) {
    return error_of([&] {
      OsisStats stats;
      osis_verse_text(osis, stats);
    });
  };
  EXPECT_NE(err("a <w lemma=\"x\"").find("unterminated tag at character 2"), std::string::npos);
  EXPECT_NE(err("a <w lemma=x>b</w>").find("malformed attribute"), std::string::npos);
  EXPECT_NE(err("a < w>b").find("malformed tag"), std::string::npos);
  EXPECT_NE(err("a &nbsp; b").find("unknown entity &nbsp;"), std::string::npos);
  EXPECT_NE(err("a & b").find("bare '&'"), std::string::npos);
  EXPECT_NE(err("<w><q>a</w></q>").find("</w> at character 7 closes <q>"), std::string::npos);
  EXPECT_NE(err("God<note>a note").find("<note> is not closed"), std::string::npos);
  EXPECT_NE(err("a note</note> God").find("</note> at character 6 without its <note>"),
            std::string::npos);
  EXPECT_NE(err("a <!-- b").find("unterminated comment"), std::string::npos);
}

}  // namespace
}  // namespace tfm
