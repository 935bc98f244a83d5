package inspect

import (
	"bufio"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
)

var (
	//go:embed page.html.tmpl
	pageHTML string
	//go:embed page.css
	pageCSS string
	//go:embed page.js
	pageJS string

	pageTemplate = template.Must(template.New("page").Parse(pageHTML))
)

// Render writes the page as one self-contained HTML document. The data goes
// in as JSON inside <script type="application/json">, escaped by
// html/template; the stylesheet and script are this package's own files.
func Render(w io.Writer, p *Page) error {
	return pageTemplate.Execute(w, struct {
		Page *Page
		CSS  template.CSS
		JS   template.JS
	}{p, template.CSS(pageCSS), template.JS(pageJS)})
}

// WriteFile renders p to path, through a temporary file in the same
// directory renamed when complete.
func WriteFile(path string, p *Page) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := Render(bw, p); err != nil {
		tmp.Close()
		return fmt.Errorf("inspect: render: %w", err)
	}
	if err := errors.Join(bw.Flush(), tmp.Chmod(0o644), tmp.Close()); err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	return nil
}
