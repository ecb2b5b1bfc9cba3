// The replay player of simtk.viz.export_html: a small WebGL renderer, no libraries, no network.
//
// The page holds a JSON block (id "simtk-data") with the scene and the recording:
//   geoms:  [{mode: "triangles"|"lines", pos: base64 uint16 (n*3) quantized in [lo, hi], lo, hi,
//             idx: base64 uint16|uint32, wide: bool}]
//   items:  [{slot, geom, q: [w,x,y,z], p: [x,y,z], rgba: [r,g,b,a]}]    (the part's pose in its body)
//   times:  base64 float32 (F),  poses: base64 float32 (F * nslots * 7: w,x,y,z,px,py,pz per slot)
//   camera: {eye, target, up, fov (degrees)}, background: [r,g,b], autoplay, loop, title
//   paths:  null, or {n, names, counts: base64 uint32 (F*n vertices per frame and path), pts: base64
//           float32 (their x,y,z in Ground, frame by frame, path by path), marks: base64 uint8 (1 where
//           a vertex is a path or tangent point), rgb: base64 uint8 (F*n*3)}
//   deformables: null, or {bodies: [{name, n (particles), segs: base64 uint32 (2 per spring), tris: base64
//           uint32 (3 per surface triangle), kinds: base64 uint8 (0 free, 1 fixed, 2 attached), points:
//           bool, spring: [r,g,b], surface: [r,g,b]}], total (particles of all bodies), pointColors
//           (by kind), pts: base64 float32 (F*total*3: every particle in Ground, frame by frame)}
// window.simtkReplay offers seek(i), play(), pause(), frame(), draw() for scripts and tests.
(function () {
  "use strict";

  const D = JSON.parse(document.getElementById("simtk-data").textContent);

  function bytes(s) {
    const bin = atob(s);
    const a = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) a[i] = bin.charCodeAt(i);
    return a.buffer;
  }

  // ---------------------------------------------------------------- 4x4 matrices, column-major
  function mul(a, b, o) {
    for (let c = 0; c < 4; c++) {
      for (let r = 0; r < 4; r++) {
        o[c * 4 + r] = a[r] * b[c * 4] + a[4 + r] * b[c * 4 + 1] + a[8 + r] * b[c * 4 + 2] + a[12 + r] * b[c * 4 + 3];
      }
    }
    return o;
  }
  function fromQP(q, off, o) {
    // The rigid transform of quaternion (w, x, y, z) = q[off..off+3] and position q[off+4..off+6].
    const w = q[off], x = q[off + 1], y = q[off + 2], z = q[off + 3];
    o[0] = 1 - 2 * (y * y + z * z); o[1] = 2 * (x * y + w * z);     o[2] = 2 * (x * z - w * y);     o[3] = 0;
    o[4] = 2 * (x * y - w * z);     o[5] = 1 - 2 * (x * x + z * z); o[6] = 2 * (y * z + w * x);     o[7] = 0;
    o[8] = 2 * (x * z + w * y);     o[9] = 2 * (y * z - w * x);     o[10] = 1 - 2 * (x * x + y * y); o[11] = 0;
    o[12] = q[off + 4]; o[13] = q[off + 5]; o[14] = q[off + 6]; o[15] = 1;
    return o;
  }
  function sub(a, b) { return [a[0] - b[0], a[1] - b[1], a[2] - b[2]]; }
  function dot(a, b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
  function cross(a, b) { return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]; }
  function norm(a) { const n = Math.hypot(a[0], a[1], a[2]) || 1; return [a[0] / n, a[1] / n, a[2] / n]; }
  function axpy(s, a, b) { return [s * a[0] + b[0], s * a[1] + b[1], s * a[2] + b[2]]; }
  function viewProj(eye, target, up, fovDeg, aspect, near, far) {
    // gluLookAt followed by gluPerspective: the projection the tests reproduce in Python.
    const f = norm(sub(target, eye)), s = norm(cross(f, up)), u = cross(s, f);
    const V = new Float32Array([s[0], u[0], -f[0], 0, s[1], u[1], -f[1], 0, s[2], u[2], -f[2], 0,
      -dot(s, eye), -dot(u, eye), dot(f, eye), 1]);
    const t = 1 / Math.tan(fovDeg * Math.PI / 360);
    const P = new Float32Array([t / aspect, 0, 0, 0, 0, t, 0, 0, 0, 0, (far + near) / (near - far), -1,
      0, 0, 2 * far * near / (near - far), 0]);
    return mul(P, V, new Float32Array(16));
  }

  // ---------------------------------------------------------------- WebGL set-up
  const canvas = document.getElementById("view");
  const gl = canvas.getContext("webgl", { antialias: true, preserveDrawingBuffer: true });
  if (!gl) {
    document.getElementById("msg").textContent = "This browser has no WebGL: the replay cannot be drawn.";
    return;
  }
  const bigIndex = gl.getExtension("OES_element_index_uint");
  const VS = "attribute vec3 aPos; attribute vec3 aNrm; uniform mat4 uModel; uniform mat4 uViewProj;" +
    "varying vec3 vN; varying vec3 vW;" +
    "void main() { vec4 w = uModel * vec4(aPos, 1.0); vW = w.xyz; vN = (uModel * vec4(aNrm, 0.0)).xyz;" +
    " gl_Position = uViewProj * w; }";
  // A headlight: full colour where a surface faces the eye, never darker than 30 % (both sides lit,
  // so open meshes and the inside of transparent shapes read too).
  const FS = "precision mediump float; uniform vec4 uColor; uniform vec3 uEye; uniform float uLit;" +
    "varying vec3 vN; varying vec3 vW;" +
    "void main() { float k = 1.0;" +
    // Lines have no normal (normalize(0) is NaN, which mix() would spread): they are drawn unlit.
    " if (uLit > 0.5) { k = 0.3 + 0.7 * abs(dot(normalize(vN), normalize(uEye - vW))); }" +
    " gl_FragColor = vec4(uColor.rgb * k, uColor.a); }";
  function shader(type, src) {
    const s = gl.createShader(type);
    gl.shaderSource(s, src);
    gl.compileShader(s);
    if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(s));
    return s;
  }
  const prog = gl.createProgram();
  gl.attachShader(prog, shader(gl.VERTEX_SHADER, VS));
  gl.attachShader(prog, shader(gl.FRAGMENT_SHADER, FS));
  gl.linkProgram(prog);
  gl.useProgram(prog);
  const loc = {
    pos: gl.getAttribLocation(prog, "aPos"), nrm: gl.getAttribLocation(prog, "aNrm"),
    model: gl.getUniformLocation(prog, "uModel"), vp: gl.getUniformLocation(prog, "uViewProj"),
    color: gl.getUniformLocation(prog, "uColor"), eye: gl.getUniformLocation(prog, "uEye"),
    lit: gl.getUniformLocation(prog, "uLit"),
  };

  // ---------------------------------------------------------------- geometry
  const geoms = D.geoms.map(function (g) {
    const qpos = new Uint16Array(bytes(g.pos));
    const n = qpos.length / 3;
    const pos = new Float32Array(qpos.length);
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < 3; k++) pos[3 * i + k] = g.lo[k] + (g.hi[k] - g.lo[k]) * qpos[3 * i + k] / 65535;
    }
    const idx = g.wide ? new Uint32Array(bytes(g.idx)) : new Uint16Array(bytes(g.idx));
    const nrm = new Float32Array(pos.length);
    if (g.mode === "triangles") {
      // Smooth normals: each vertex gets the area-weighted sum of its triangles' normals.
      for (let t = 0; t < idx.length; t += 3) {
        const a = idx[t] * 3, b = idx[t + 1] * 3, c = idx[t + 2] * 3;
        const e1 = [pos[b] - pos[a], pos[b + 1] - pos[a + 1], pos[b + 2] - pos[a + 2]];
        const e2 = [pos[c] - pos[a], pos[c + 1] - pos[a + 1], pos[c + 2] - pos[a + 2]];
        const fn = cross(e1, e2);
        for (const v of [a, b, c]) { nrm[v] += fn[0]; nrm[v + 1] += fn[1]; nrm[v + 2] += fn[2]; }
      }
    }
    const vb = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, vb);
    gl.bufferData(gl.ARRAY_BUFFER, pos, gl.STATIC_DRAW);
    const nb = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, nb);
    gl.bufferData(gl.ARRAY_BUFFER, nrm, gl.STATIC_DRAW);
    const ib = gl.createBuffer();
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, ib);
    gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, idx, gl.STATIC_DRAW);
    const usable = !g.wide || bigIndex;
    return { vb: vb, nb: nb, ib: ib, count: usable ? idx.length : 0, lines: g.mode === "lines",
      type: g.wide ? gl.UNSIGNED_INT : gl.UNSIGNED_SHORT };
  });
  const items = D.items.map(function (it) {
    return { slot: it.slot, geom: geoms[it.geom], local: fromQP(it.q.concat(it.p), 0, new Float32Array(16)),
      rgba: it.rgba, clear: it.rgba[3] < 1 };
  });
  // Opaque parts first, then the transparent ones over them without writing depth.
  items.sort(function (a, b) { return (a.clear ? 1 : 0) - (b.clear ? 1 : 0); });

  const times = new Float32Array(bytes(D.times));
  const poses = new Float32Array(bytes(D.poses));
  const nslots = D.nslots, F = times.length;

  // ---------------------------------------------------------------- paths (a polyline per frame)
  const P = D.paths ? D.paths.n : 0;
  const pathCounts = P ? new Uint32Array(bytes(D.paths.counts)) : new Uint32Array(0);
  const pathPts = P ? new Float32Array(bytes(D.paths.pts)) : new Float32Array(0);
  const pathMarks = P ? new Uint8Array(bytes(D.paths.marks)) : new Uint8Array(0);
  const pathRgb = P ? new Uint8Array(bytes(D.paths.rgb)) : new Uint8Array(0);
  const pathStart = new Uint32Array(pathCounts.length + 1);  // first vertex of (frame, path)
  for (let i = 0; i < pathCounts.length; i++) pathStart[i + 1] = pathStart[i] + pathCounts[i];
  const pathBuf = P ? gl.createBuffer() : null;
  const IDENTITY = new Float32Array([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);

  // ---------------------------------------------------------------- deformable bodies (particles per frame)
  // The connectivity is uploaded once; each frame only the particles' positions (and the surface's
  // normals, which follow them) go to the GPU.
  const DF = D.deformables;
  const defTotal = DF ? DF.total : 0;
  const defPts = DF ? new Float32Array(bytes(DF.pts)) : new Float32Array(0);
  const defs = [];
  if (DF) {
    let start = 0;
    for (const b of DF.bodies) {
      const tris = new Uint32Array(bytes(b.tris));
      const d = { n: b.n, start: start, segs: new Uint32Array(bytes(b.segs)), tris: tris,
        kinds: new Uint8Array(bytes(b.kinds)), points: b.points, spring: b.spring, surface: b.surface, count: 0 };
      if (tris.length) {
        const wide = b.n > 65535;
        d.type = wide ? gl.UNSIGNED_INT : gl.UNSIGNED_SHORT;
        d.ib = gl.createBuffer();
        gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, d.ib);
        gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, wide ? tris : new Uint16Array(tris), gl.STATIC_DRAW);
        d.count = !wide || bigIndex ? tris.length : 0;
        d.vb = gl.createBuffer();
        d.nb = gl.createBuffer();
        d.nrm = new Float32Array(3 * b.n);
      }
      defs.push(d);
      start += b.n;
    }
  }
  const defBuf = defs.length ? gl.createBuffer() : null;

  // ---------------------------------------------------------------- camera (orbit about the target)
  const cam = {};
  function resetCamera() {
    const c = D.camera;
    cam.target = c.target.slice();
    cam.up = norm(c.up);
    const v = sub(c.eye, c.target);
    cam.dist = Math.hypot(v[0], v[1], v[2]);
    const dir = norm(v);
    cam.el = Math.asin(Math.max(-1, Math.min(1, dot(dir, cam.up))));
    let h = axpy(-dot(dir, cam.up), cam.up, dir);
    if (Math.hypot(h[0], h[1], h[2]) < 1e-9) h = norm(cross(cam.up, [cam.up[1], cam.up[2], cam.up[0]]));
    cam.e1 = norm(h);
    cam.e2 = cross(cam.up, cam.e1);
    cam.az = 0;
    cam.fov = c.fov;
  }
  function eyeOf() {
    const ce = Math.cos(cam.el);
    const d = axpy(Math.sin(cam.el), cam.up, axpy(ce * Math.sin(cam.az), cam.e2, [ce * Math.cos(cam.az) * cam.e1[0],
      ce * Math.cos(cam.az) * cam.e1[1], ce * Math.cos(cam.az) * cam.e1[2]]));
    return axpy(cam.dist, d, cam.target);
  }
  resetCamera();

  // ---------------------------------------------------------------- drawing
  const bg = D.background;
  const bodyM = [];
  for (let s = 0; s < nslots; s++) bodyM.push(new Float32Array(16));
  const model = new Float32Array(16);
  let current = 0;

  function draw() {
    const w = canvas.clientWidth, h = canvas.clientHeight;
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
    }
    gl.viewport(0, 0, canvas.width, canvas.height);
    gl.clearColor(bg[0], bg[1], bg[2], 1);
    gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
    gl.enable(gl.DEPTH_TEST);
    const eye = eyeOf();
    const vp = viewProj(eye, cam.target, cam.up, cam.fov, canvas.width / Math.max(canvas.height, 1),
      cam.dist * 0.01, cam.dist * 100);
    gl.uniformMatrix4fv(loc.vp, false, vp);
    gl.uniform3fv(loc.eye, eye);
    const base = current * nslots * 7;
    for (let s = 0; s < nslots; s++) fromQP(poses, base + 7 * s, bodyM[s]);
    gl.disable(gl.BLEND);
    gl.depthMask(true);
    for (const it of items) {
      if (it.clear) {
        gl.enable(gl.BLEND);
        gl.blendFunc(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA);
        gl.depthMask(false);
      }
      const g = it.geom;
      if (!g.count) continue;
      gl.uniformMatrix4fv(loc.model, false, mul(bodyM[it.slot], it.local, model));
      gl.uniform4fv(loc.color, it.rgba);
      gl.uniform1f(loc.lit, g.lines ? 0 : 1);
      gl.bindBuffer(gl.ARRAY_BUFFER, g.vb);
      gl.enableVertexAttribArray(loc.pos);
      gl.vertexAttribPointer(loc.pos, 3, gl.FLOAT, false, 0, 0);
      gl.bindBuffer(gl.ARRAY_BUFFER, g.nb);
      gl.enableVertexAttribArray(loc.nrm);
      gl.vertexAttribPointer(loc.nrm, 3, gl.FLOAT, false, 0, 0);
      gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, g.ib);
      gl.drawElements(g.lines ? gl.LINES : gl.TRIANGLES, g.count, g.type, 0);
    }
    gl.depthMask(true);
    if (defs.length) drawDeformables(vp);
    if (P) drawPaths(vp);
  }

  function toNdc(vp, src, v0, n) {
    // Vertices v0 .. v0+n-1 of src (x, y, z each) in normalized device coordinates; ok[j] = 0 behind the eye.
    const ndc = new Float32Array(3 * n), ok = new Uint8Array(n);
    for (let j = 0; j < n; j++) {
      const x = src[3 * (v0 + j)], y = src[3 * (v0 + j) + 1], z = src[3 * (v0 + j) + 2];
      const w = vp[3] * x + vp[7] * y + vp[11] * z + vp[15];
      ok[j] = w > 1e-9 ? 1 : 0;
      if (!ok[j]) continue;
      ndc[3 * j] = (vp[0] * x + vp[4] * y + vp[8] * z + vp[12]) / w;
      ndc[3 * j + 1] = (vp[1] * x + vp[5] * y + vp[9] * z + vp[13]) / w;
      ndc[3 * j + 2] = (vp[2] * x + vp[6] * y + vp[10] * z + vp[14]) / w;
    }
    return { ndc: ndc, ok: ok };
  }
  function pushQuad(tri, ax, ay, bx, by, z0, z1, ox, oy) {
    tri.push(ax - ox, ay - oy, z0, ax + ox, ay + oy, z0, bx + ox, by + oy, z1,
      ax - ox, ay - oy, z0, bx + ox, by + oy, z1, bx - ox, by - oy, z1);
  }
  function flushFlat(tri, rgb) {
    // Draws the NDC triangles of tri in one colour (the buffer bound, identity matrices set).
    if (!tri.length) return;
    gl.uniform4f(loc.color, rgb[0], rgb[1], rgb[2], 1);
    gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(tri), gl.DYNAMIC_DRAW);
    gl.enableVertexAttribArray(loc.pos);
    gl.vertexAttribPointer(loc.pos, 3, gl.FLOAT, false, 0, 0);
    gl.drawArrays(gl.TRIANGLES, 0, tri.length / 3);
  }

  function drawDeformables(vp) {
    const base = current * defTotal;
    gl.disable(gl.BLEND);
    gl.depthMask(true);
    gl.uniformMatrix4fv(loc.vp, false, vp);
    gl.uniformMatrix4fv(loc.model, false, IDENTITY);
    gl.uniform1f(loc.lit, 1);
    for (const d of defs) {
      if (!d.count) continue;
      const pos = defPts.subarray(3 * (base + d.start), 3 * (base + d.start + d.n));
      // Smooth normals from this frame's positions: the surface bends as the particles move.
      const nrm = d.nrm, t3 = d.tris;
      nrm.fill(0);
      for (let t = 0; t < t3.length; t += 3) {
        const a = 3 * t3[t], b = 3 * t3[t + 1], c = 3 * t3[t + 2];
        const fn = cross([pos[b] - pos[a], pos[b + 1] - pos[a + 1], pos[b + 2] - pos[a + 2]],
          [pos[c] - pos[a], pos[c + 1] - pos[a + 1], pos[c + 2] - pos[a + 2]]);
        for (const v of [a, b, c]) { nrm[v] += fn[0]; nrm[v + 1] += fn[1]; nrm[v + 2] += fn[2]; }
      }
      gl.uniform4f(loc.color, d.surface[0], d.surface[1], d.surface[2], 1);
      gl.bindBuffer(gl.ARRAY_BUFFER, d.vb);
      gl.bufferData(gl.ARRAY_BUFFER, pos, gl.DYNAMIC_DRAW);
      gl.enableVertexAttribArray(loc.pos);
      gl.vertexAttribPointer(loc.pos, 3, gl.FLOAT, false, 0, 0);
      gl.bindBuffer(gl.ARRAY_BUFFER, d.nb);
      gl.bufferData(gl.ARRAY_BUFFER, nrm, gl.DYNAMIC_DRAW);
      gl.enableVertexAttribArray(loc.nrm);
      gl.vertexAttribPointer(loc.nrm, 3, gl.FLOAT, false, 0, 0);
      gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, d.ib);
      gl.drawElements(gl.TRIANGLES, d.count, d.type, 0);
    }
    // Springs and particles keep their width on screen, as the paths do: quads in NDC.
    const W = canvas.width / 2, H = canvas.height / 2, dpr = window.devicePixelRatio || 1;
    const half = 1.5 * dpr, small = 3.0 * dpr, big = 5.0 * dpr;
    gl.uniformMatrix4fv(loc.vp, false, IDENTITY);
    gl.uniform1f(loc.lit, 0);
    gl.disableVertexAttribArray(loc.nrm);
    gl.vertexAttrib3f(loc.nrm, 0, 0, 0);
    gl.bindBuffer(gl.ARRAY_BUFFER, defBuf);
    gl.depthFunc(gl.LEQUAL);  // a particle's square lies at its springs' depth: draw it over them
    for (const d of defs) {
      if (!d.segs.length && !d.points) continue;
      const p = toNdc(vp, defPts, base + d.start, d.n), ndc = p.ndc, ok = p.ok;
      let tri = [];
      for (let s = 0; s < d.segs.length; s += 2) {
        const i = d.segs[s], j = d.segs[s + 1];
        if (!ok[i] || !ok[j]) continue;
        const ax = ndc[3 * i], ay = ndc[3 * i + 1], bx = ndc[3 * j], by = ndc[3 * j + 1];
        const dx = (bx - ax) * W, dy = (by - ay) * H, m = Math.hypot(dx, dy);
        if (m < 1e-12) continue;
        pushQuad(tri, ax, ay, bx, by, ndc[3 * i + 2], ndc[3 * j + 2], -dy / m * half / W, dx / m * half / H);
      }
      flushFlat(tri, d.spring);
      if (!d.points) continue;
      for (let kind = 0; kind < 3; kind++) {
        tri = [];
        const r = kind ? big : small;
        for (let j = 0; j < d.n; j++) {
          if (!ok[j] || d.kinds[j] !== kind) continue;
          const x = ndc[3 * j], y = ndc[3 * j + 1], z = ndc[3 * j + 2];
          pushQuad(tri, x - r / W, y, x + r / W, y, z, z, 0, r / H);
        }
        flushFlat(tri, DF.pointColors[kind]);
      }
    }
    gl.depthFunc(gl.LESS);
  }

  function drawPaths(vp) {
    // Ribbons of constant width on screen (WebGL draws lines one pixel wide): each segment is a quad
    // in normalized device coordinates, each path point a small square, drawn with identity matrices.
    const W = canvas.width / 2, H = canvas.height / 2, dpr = window.devicePixelRatio || 1;
    const half = 2.0 * dpr, dot = 3.5 * dpr;
    gl.disable(gl.BLEND);
    gl.uniformMatrix4fv(loc.vp, false, IDENTITY);
    gl.uniformMatrix4fv(loc.model, false, IDENTITY);
    gl.uniform1f(loc.lit, 0);
    gl.disableVertexAttribArray(loc.nrm);
    gl.vertexAttrib3f(loc.nrm, 0, 0, 0);
    gl.bindBuffer(gl.ARRAY_BUFFER, pathBuf);
    for (let k = 0; k < P; k++) {
      const i = current * P + k, n = pathCounts[i], v0 = pathStart[i];
      if (n < 1) continue;
      const ndc = new Float32Array(3 * n), ok = new Uint8Array(n);
      for (let j = 0; j < n; j++) {
        const x = pathPts[3 * (v0 + j)], y = pathPts[3 * (v0 + j) + 1], z = pathPts[3 * (v0 + j) + 2];
        const w = vp[3] * x + vp[7] * y + vp[11] * z + vp[15];
        ok[j] = w > 1e-9 ? 1 : 0;
        if (!ok[j]) continue;
        ndc[3 * j] = (vp[0] * x + vp[4] * y + vp[8] * z + vp[12]) / w;
        ndc[3 * j + 1] = (vp[1] * x + vp[5] * y + vp[9] * z + vp[13]) / w;
        ndc[3 * j + 2] = (vp[2] * x + vp[6] * y + vp[10] * z + vp[14]) / w;
      }
      const tri = [];
      function quad(ax, ay, bx, by, z0, z1, ox, oy) {
        tri.push(ax - ox, ay - oy, z0, ax + ox, ay + oy, z0, bx + ox, by + oy, z1,
          ax - ox, ay - oy, z0, bx + ox, by + oy, z1, bx - ox, by - oy, z1);
      }
      for (let j = 0; j + 1 < n; j++) {
        if (!ok[j] || !ok[j + 1]) continue;
        const ax = ndc[3 * j], ay = ndc[3 * j + 1], bx = ndc[3 * j + 3], by = ndc[3 * j + 4];
        const dx = (bx - ax) * W, dy = (by - ay) * H, m = Math.hypot(dx, dy);
        if (m < 1e-12) continue;
        quad(ax, ay, bx, by, ndc[3 * j + 2], ndc[3 * j + 5], -dy / m * half / W, dx / m * half / H);
      }
      for (let j = 0; j < n; j++) {
        if (!ok[j] || !pathMarks[v0 + j]) continue;
        const x = ndc[3 * j], y = ndc[3 * j + 1], z = ndc[3 * j + 2];
        quad(x - dot / W, y, x + dot / W, y, z, z, 0, dot / H);
      }
      if (!tri.length) continue;
      gl.uniform4f(loc.color, pathRgb[3 * i] / 255, pathRgb[3 * i + 1] / 255, pathRgb[3 * i + 2] / 255, 1);
      gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(tri), gl.DYNAMIC_DRAW);
      gl.enableVertexAttribArray(loc.pos);
      gl.vertexAttribPointer(loc.pos, 3, gl.FLOAT, false, 0, 0);
      gl.drawArrays(gl.TRIANGLES, 0, tri.length / 3);
    }
  }

  // ---------------------------------------------------------------- playback and controls
  const slider = document.getElementById("slider");
  const label = document.getElementById("time");
  const button = document.getElementById("play");
  const speedSel = document.getElementById("speed");
  const loopBox = document.getElementById("loop");
  slider.max = String(Math.max(F - 1, 0));
  loopBox.checked = !!D.loop;
  let playing = false, playT = 0, lastWall = 0, pending = false;

  function show(i) {
    current = Math.max(0, Math.min(F - 1, i | 0));
    slider.value = String(current);
    label.textContent = "t = " + (F ? times[current] : 0).toFixed(3) + " s";
    request();
  }
  function request() {
    if (!pending) { pending = true; requestAnimationFrame(tick); }
  }
  function frameAt(t) {
    // The last frame recorded at or before t (binary search).
    let lo = 0, hi = F - 1;
    while (lo < hi) { const m = (lo + hi + 1) >> 1; if (times[m] <= t) lo = m; else hi = m - 1; }
    return lo;
  }
  function tick(wall) {
    pending = false;
    if (playing && F > 1) {
      const dt = lastWall ? (wall - lastWall) / 1000 : 0;
      lastWall = wall;
      playT += dt * parseFloat(speedSel.value);
      if (playT > times[F - 1]) {
        if (loopBox.checked) playT = times[0];
        else { playT = times[F - 1]; setPlaying(false); }
      }
      current = frameAt(playT);
      slider.value = String(current);
      label.textContent = "t = " + times[current].toFixed(3) + " s";
      pending = true;
      requestAnimationFrame(tick);
    }
    draw();
  }
  function setPlaying(on) {
    playing = on && F > 1;
    button.textContent = playing ? "Pause" : "Play";
    if (playing) {
      if (current >= F - 1) current = 0;
      playT = times[current];
      lastWall = 0;
      request();
    }
  }
  button.addEventListener("click", function () { setPlaying(!playing); });
  slider.addEventListener("input", function () { setPlaying(false); show(parseInt(slider.value, 10)); });
  document.getElementById("reset").addEventListener("click", function () { resetCamera(); request(); });
  window.addEventListener("resize", request);

  // Mouse: drag to orbit, shift-drag or right-drag to pan, wheel to zoom.
  let drag = null;
  canvas.addEventListener("contextmenu", function (e) { e.preventDefault(); });
  canvas.addEventListener("mousedown", function (e) { drag = { x: e.clientX, y: e.clientY, pan: e.shiftKey || e.button === 2 }; });
  window.addEventListener("mouseup", function () { drag = null; });
  window.addEventListener("mousemove", function (e) {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    drag.x = e.clientX; drag.y = e.clientY;
    if (drag.pan) {
      const eye = eyeOf(), f = norm(sub(cam.target, eye)), s = norm(cross(f, cam.up)), u = cross(s, f);
      const k = cam.dist * 2 * Math.tan(cam.fov * Math.PI / 360) / Math.max(canvas.clientHeight, 1);
      cam.target = axpy(k * dy, u, axpy(-k * dx, s, cam.target));
    } else {
      cam.az -= dx * 0.01;
      cam.el = Math.max(-1.55, Math.min(1.55, cam.el + dy * 0.01));
    }
    request();
  });
  canvas.addEventListener("wheel", function (e) {
    e.preventDefault();
    cam.dist *= Math.exp(e.deltaY * 0.001);
    request();
  }, { passive: false });
  window.addEventListener("keydown", function (e) {
    if (e.key === " ") { e.preventDefault(); setPlaying(!playing); }
    else if (e.key === "ArrowRight") { setPlaying(false); show(current + 1); }
    else if (e.key === "ArrowLeft") { setPlaying(false); show(current - 1); }
  });

  window.simtkReplay = {
    nFrames: F,
    nPaths: P,
    nDeformables: defs.length,
    times: Array.from(times),
    seek: function (i) { setPlaying(false); current = Math.max(0, Math.min(F - 1, i | 0)); show(current); draw(); },
    play: function () { setPlaying(true); },
    pause: function () { setPlaying(false); },
    frame: function () { return current; },
    draw: draw,
    ready: true,
  };
  show(0);
  draw();  // now, not at the next animation frame: the canvas has its size once the page has loaded
  if (D.autoplay) setPlaying(true);
})();
