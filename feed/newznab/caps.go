package newznab

import (
	"strconv"
	"strings"
)

// Caps is what an indexer says about itself (t=caps).
type Caps struct {
	// Title and Version name the server software, as reported.
	Title, Version string
	// MaxLimit is the most results one search page may hold; DefaultLimit
	// is what a search without limit gets. Zero when not reported.
	MaxLimit, DefaultLimit int
	// Limits are the account's API limits, when the indexer reports them
	// with caps.
	Limits APILimits
	// Search is true unless the indexer says plain search is unavailable.
	Search bool
	// Categories are the indexer's categories.
	Categories []Category
}

// Category is one indexer category and its subcategories.
type Category struct {
	ID      int
	Name    string
	Subcats []Category
}

type capsDoc struct {
	Server    xmlAttrs  `xml:"server"`
	Limits    *xmlAttrs `xml:"limits"`
	APILimits *xmlAttrs `xml:"apilimits"`
	Searching struct {
		Search *xmlAttrs `xml:"search"`
	} `xml:"searching"`
	Categories struct {
		Category []capsCategory `xml:"category"`
	} `xml:"categories"`
}

type capsCategory struct {
	xmlAttrs
	Subcat []xmlAttrs `xml:"subcat"`
}

// maxCategories bounds what is kept of a caps category list.
const maxCategories = 1000

func parseCaps(data []byte) (Caps, error) {
	var doc capsDoc
	if err := document(data, "caps", &doc); err != nil {
		return Caps{}, err
	}
	c := Caps{
		Title:   truncate(doc.Server.get("title"), 200),
		Version: truncate(doc.Server.get("version"), 40),
		Search:  true,
	}
	if l := doc.Limits; l != nil {
		c.MaxLimit = positive(l.get("max"))
		c.DefaultLimit = positive(l.get("default"))
	}
	if l := doc.APILimits; l != nil {
		c.Limits = parseLimits(*l)
	}
	if s := doc.Searching.Search; s != nil && strings.EqualFold(strings.TrimSpace(s.get("available")), "no") {
		c.Search = false
	}
	n := 0
	for _, cat := range doc.Categories.Category {
		if n >= maxCategories {
			break
		}
		top := Category{ID: positive(cat.get("id")), Name: truncate(cat.get("name"), 200)}
		n++
		for _, sub := range cat.Subcat {
			if n >= maxCategories {
				break
			}
			top.Subcats = append(top.Subcats, Category{ID: positive(sub.get("id")), Name: truncate(sub.get("name"), 200)})
			n++
		}
		c.Categories = append(c.Categories, top)
	}
	return c, nil
}

func positive(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0
	}
	return n
}
