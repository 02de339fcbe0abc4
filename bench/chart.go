package bench

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"sort"
	"strings"

	"ticketd/bench/load"
)

// Chart draws latency (p50, p99, p99.9; log scale) against achieved
// throughput for the flash-sale and checkin-burst runs, one panel each, as
// a PNG. It returns nil when neither scenario ran. The text uses a built-in
// 3x5 pixel font so the chart needs no font module.
func (r *Report) Chart() ([]byte, error) {
	panels := []string{"flash-sale", "checkin-burst"}
	var series [][]load.Result
	for _, p := range panels {
		var rs []load.Result
		for _, x := range r.Runs {
			if x.Name == p || strings.HasPrefix(x.Name, p+"@") {
				rs = append(rs, x)
			}
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].RPS < rs[j].RPS })
		series = append(series, rs)
	}
	if len(series[0]) == 0 && len(series[1]) == 0 {
		return nil, nil
	}
	const pw, ph = 520, 420
	img := image.NewRGBA(image.Rect(0, 0, pw*len(panels), ph))
	fill(img, img.Bounds(), color.RGBA{255, 255, 255, 255})
	for i, p := range panels {
		drawPanel(img, image.Rect(i*pw, 0, (i+1)*pw, ph), strings.ToUpper(p), series[i], r.CeilingRPS)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("bench: encode chart: %w", err)
	}
	return buf.Bytes(), nil
}

var (
	black  = color.RGBA{0, 0, 0, 255}
	grey   = color.RGBA{220, 220, 220, 255}
	lineCs = []color.RGBA{{30, 90, 200, 255}, {210, 40, 40, 255}, {230, 150, 0, 255}}
)

func drawPanel(img *image.RGBA, area image.Rectangle, title string, rs []load.Result, ceiling float64) {
	left, right, top, bottom := area.Min.X+70, area.Max.X-20, area.Min.Y+50, area.Max.Y-60
	text(img, area.Min.X+70, area.Min.Y+12, title+" LATENCY VS REQ/S", black, 2)
	if len(rs) == 0 {
		text(img, left, top+40, "NOT RUN", black, 2)
		return
	}
	xmax := 0.0
	ymin, ymax := math.Inf(1), 0.0
	for _, x := range rs {
		xmax = max(xmax, x.RPS)
		for _, v := range []float64{x.P50, x.P99, x.P999} {
			ymin, ymax = min(ymin, max(v, 0.01)), max(ymax, v)
		}
	}
	xmax = niceCeil(xmax * 1.05)
	lo, hi := math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(max(ymax, ymin*10)))
	px := func(v float64) int { return left + int(float64(right-left)*v/xmax) }
	py := func(v float64) int {
		return bottom - int(float64(bottom-top)*(math.Log10(max(v, 0.01))-lo)/(hi-lo))
	}
	// Grid and tick labels: decades of latency, fifths of throughput.
	for d := lo; d <= hi; d++ {
		y := py(math.Pow(10, d))
		hline(img, left, right, y, grey)
		text(img, area.Min.X+8, y-5, fmtNum(math.Pow(10, d)), black, 2)
	}
	for i := 0; i <= 5; i++ {
		v := xmax * float64(i) / 5
		x := px(v)
		vline(img, x, top, bottom, grey)
		text(img, x-12, bottom+8, fmtNum(v), black, 2)
	}
	hline(img, left, right, bottom, black)
	vline(img, left, top, bottom, black)
	text(img, left+(right-left)/2-30, bottom+26, "REQ/S", black, 2)
	text(img, area.Min.X+8, top-20, "MS", black, 2)
	if ceiling > 0 {
		text(img, area.Min.X+70, area.Min.Y+30, "CEILING "+fmtNum(ceiling)+" REQ/S", black, 2)
	}
	if ceiling > 0 && ceiling <= xmax {
		x := px(ceiling)
		for y := top; y < bottom; y += 6 {
			vline(img, x, y, min(y+3, bottom), black)
		}
		text(img, x-40, top-14, "CEILING", black, 2)
	}
	// Open-loop runs make the curve; the closed-loop maximum is a black
	// mark, since its latency hides queueing and is not on the same curve.
	var open []load.Result
	for _, x := range rs {
		if x.Mode == "open" {
			open = append(open, x)
		} else {
			for _, v := range []float64{x.P50, x.P99, x.P999} {
				X, Y := px(x.RPS), py(v)
				fill(img, image.Rect(X-4, Y-1, X+5, Y+2), black)
				fill(img, image.Rect(X-1, Y-4, X+2, Y+5), black)
			}
		}
	}
	rs = open
	for k, get := range []func(load.Result) float64{
		func(x load.Result) float64 { return x.P50 },
		func(x load.Result) float64 { return x.P99 },
		func(x load.Result) float64 { return x.P999 },
	} {
		c := lineCs[k]
		for i, x := range rs {
			X, Y := px(x.RPS), py(get(x))
			fill(img, image.Rect(X-3, Y-3, X+4, Y+4), c)
			if i > 0 {
				line(img, px(rs[i-1].RPS), py(get(rs[i-1])), X, Y, c)
			}
		}
	}
	text(img, left+330, bottom+44, "+ CLOSED LOOP", black, 2)
	for k, name := range []string{"P50", "P99", "P99.9"} {
		y := bottom + 44
		x := left + k*110
		fill(img, image.Rect(x, y, x+14, y+10), lineCs[k])
		text(img, x+20, y, name, black, 2)
	}
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fmtNum(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 10000:
		return fmt.Sprintf("%.0fK", v/1000)
	case v >= 1:
		return fmt.Sprintf("%.0f", v)
	case v >= 0.1:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

func hline(img *image.RGBA, x0, x1, y int, c color.RGBA) { fill(img, image.Rect(x0, y, x1+1, y+1), c) }
func vline(img *image.RGBA, x, y0, y1 int, c color.RGBA) { fill(img, image.Rect(x, y0, x+1, y1+1), c) }

// line draws a two-pixel-wide segment (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	err := dx + dy
	for {
		fill(img, image.Rect(x0, y0, x0+2, y0+2), c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * err
		if e2 >= dy {
			err += dy
			x0 += sx
		}
		if e2 <= dx {
			err += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// glyphs is a 3x5 pixel font: five rows of three bits, most significant
// bit on the left.
var glyphs = map[rune][5]uint8{
	'0': {7, 5, 5, 5, 7}, '1': {2, 6, 2, 2, 7}, '2': {7, 1, 7, 4, 7}, '3': {7, 1, 7, 1, 7}, '4': {5, 5, 7, 1, 1},
	'5': {7, 4, 7, 1, 7}, '6': {7, 4, 7, 5, 7}, '7': {7, 1, 1, 1, 1}, '8': {7, 5, 7, 5, 7}, '9': {7, 5, 7, 1, 7},
	'A': {2, 5, 7, 5, 5}, 'B': {6, 5, 6, 5, 6}, 'C': {7, 4, 4, 4, 7}, 'D': {6, 5, 5, 5, 6}, 'E': {7, 4, 6, 4, 7},
	'F': {7, 4, 6, 4, 4}, 'G': {7, 4, 5, 5, 7}, 'H': {5, 5, 7, 5, 5}, 'I': {7, 2, 2, 2, 7}, 'J': {1, 1, 1, 5, 7},
	'K': {5, 5, 6, 5, 5}, 'L': {4, 4, 4, 4, 7}, 'M': {5, 7, 7, 5, 5}, 'N': {6, 5, 5, 5, 5}, 'O': {7, 5, 5, 5, 7},
	'P': {7, 5, 7, 4, 4}, 'Q': {7, 5, 5, 7, 1}, 'R': {7, 5, 6, 5, 5}, 'S': {7, 4, 7, 1, 7}, 'T': {7, 2, 2, 2, 2},
	'U': {5, 5, 5, 5, 7}, 'V': {5, 5, 5, 5, 2}, 'W': {5, 5, 7, 7, 5}, 'X': {5, 5, 2, 5, 5}, 'Y': {5, 5, 2, 2, 2},
	'Z': {7, 1, 2, 4, 7}, '.': {0, 0, 0, 0, 2}, '-': {0, 0, 7, 0, 0}, '/': {1, 1, 2, 4, 4}, '%': {5, 1, 2, 4, 5},
	'(': {1, 2, 2, 2, 1}, '+': {0, 2, 7, 2, 0}, ')': {4, 2, 2, 2, 4}, ' ': {},
}

// text draws s at (x, y) with pixels of size scale.
func text(img *image.RGBA, x, y int, s string, c color.RGBA, scale int) {
	for _, ch := range strings.ToUpper(s) {
		g := glyphs[ch]
		for row := range 5 {
			for col := range 3 {
				if g[row]&(4>>col) != 0 {
					fill(img, image.Rect(x+col*scale, y+row*scale, x+(col+1)*scale, y+(row+1)*scale), c)
				}
			}
		}
		x += 4 * scale
	}
}
