-- racelens: Neovim client for the racelens language server (data races in
-- C pthread programs).
--
--   require('racelens').setup({
--     cmd = { 'racelens', 'lsp' },
--     settings = { racelens = { maySeverity = 'warning' } },
--     filetypes = { 'c' },
--     c_headers = true,   -- also `cpp` buffers of .h files in C projects
--     root_markers = { 'racelens.toml', 'compile_commands.json', '.git' },
--   })
--
-- Works on Neovim 0.7 (vim.lsp.start_client + vim.lsp.buf_attach_client, one
-- client per root directory) and on newer versions (vim.lsp.start).

local M = {}

local api = vim.api
local uv = vim.uv or vim.loop

M.name = 'racelens'
M.explain_command = 'racelens.explain'

M.defaults = {
  cmd = { 'racelens', 'lsp' },
  filetypes = { 'c' },
  -- Neovim 0.7 (and VS Code) give `.h` files the filetype `cpp`. When the
  -- filetypes include `c`, attach to `cpp` buffers too, but only for `.h`
  -- files in a C project: one whose root has .c files and no C++ sources.
  c_headers = true,
  root_markers = { 'racelens.toml', 'compile_commands.json', '.git' },
  settings = {
    racelens = {
      enable = true,
      maySeverity = 'information',
      configPath = '',
      trace = { server = 'off' },
    },
  },
  -- Extra client capabilities, deep-merged over Neovim's defaults.
  capabilities = nil,
  on_attach = nil,
  on_init = nil,
  handlers = nil,
  flags = { debounce_text_changes = 150 },
  -- Attach to matching buffers automatically (FileType autocommand).
  autostart = true,
}

-- Effective configuration, set by setup().
M.config = nil

-- Neovim 0.7 path: root directory -> client id.
M._clients_by_root = {}

local function notify(msg, level)
  vim.notify('racelens: ' .. msg, level or vim.log.levels.INFO)
end

local has_method_clients = vim.fn.has('nvim-0.11') == 1

-- Calls a client method with the calling convention of this Neovim version
-- (`client.request(...)` up to 0.10, `client:request(...)` from 0.11).
local function client_call(client, method, ...)
  if has_method_clients then
    return client[method](client, ...)
  end
  return client[method](...)
end
M._client_call = client_call

---------------------------------------------------------------------------
-- Pure helpers (unit-testable without a server)
---------------------------------------------------------------------------

--- Wraps a bare settings table as `{ racelens = {...} }` and fills defaults.
function M.normalize_settings(settings)
  settings = settings or {}
  if settings.racelens == nil then
    settings = { racelens = settings }
  end
  return vim.tbl_deep_extend('force', vim.deepcopy(M.defaults.settings), settings)
end

local valid_encodings = { ['utf-8'] = 'utf-8', ['utf-16'] = 'utf-16', ['utf-32'] = 'utf-32',
  utf8 = 'utf-8', utf16 = 'utf-16', utf32 = 'utf-32' }

--- The position encoding chosen by the server in its `initialize` result:
--- LSP 3.17 `capabilities.positionEncoding`, else clangd's `offsetEncoding`.
function M.encoding_from_result(result)
  if type(result) ~= 'table' then
    return nil
  end
  local caps = type(result.capabilities) == 'table' and result.capabilities or {}
  local candidates = { caps.positionEncoding, result.offsetEncoding }
  for i = 1, 2 do
    local enc = candidates[i]
    if type(enc) == 'string' and valid_encodings[enc:lower()] then
      return valid_encodings[enc:lower()]
    end
  end
  return nil
end

--- Client capabilities: Neovim's, plus the position encodings we offer.
function M.make_capabilities(extra)
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.general = caps.general or {}
  caps.general.positionEncodings = { 'utf-8', 'utf-16' }
  caps.offsetEncoding = { 'utf-8', 'utf-16' }
  -- We answer workspace/configuration (see configuration_handler); Neovim
  -- 0.7 does not advertise it.
  caps.workspace = caps.workspace or {}
  caps.workspace.configuration = true
  if extra then
    caps = vim.tbl_deep_extend('force', caps, extra)
  end
  return caps
end

--- Looks a dotted section up in the settings. `nil`/'' gives everything;
--- a missing key gives vim.NIL (JSON null). `false` values are kept.
function M.lookup_section(settings, section)
  if section == nil or section == '' or section == vim.NIL then
    return settings or vim.NIL
  end
  local value = settings
  for part in vim.gsplit(section, '.', true) do
    if type(value) ~= 'table' then
      return vim.NIL
    end
    value = value[part]
    if value == nil then
      return vim.NIL
    end
  end
  return value
end

--- `workspace/configuration` handler: one answer per requested item, in
--- order (Neovim 0.7's default drops items without a section).
function M.configuration_handler(_, result, ctx)
  local client = ctx and vim.lsp.get_client_by_id(ctx.client_id)
  local settings = client and client.config.settings or (M.config and M.config.settings) or {}
  local response = {}
  local items = (type(result) == 'table' and result.items) or {}
  for i, item in ipairs(items) do
    response[i] = M.lookup_section(settings, item.section)
  end
  return response
end

local function is_dir(path)
  local st = uv.fs_stat(path)
  return st ~= nil and st.type == 'directory'
end

--- Walks up from `path` (a file or directory) to the first directory that
--- contains one of `markers`; falls back to the file's directory.
function M.find_root(path, markers)
  local start
  if path == nil or path == '' then
    start = uv.cwd()
  elseif is_dir(path) then
    start = vim.fn.fnamemodify(path, ':p')
  else
    start = vim.fn.fnamemodify(path, ':p:h')
  end
  start = start:gsub('(.)/$', '%1')
  local dir = start
  while true do
    for _, marker in ipairs(markers or {}) do
      if uv.fs_stat(dir .. '/' .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir or parent == '' then
      break
    end
    dir = parent
  end
  return start
end

local function uri_to_display(uri, root)
  local ok, fname = pcall(vim.uri_to_fname, uri)
  if not ok then
    return uri
  end
  if root and root ~= '' and fname:sub(1, #root + 1) == root .. '/' then
    return fname:sub(#root + 2)
  end
  return fname
end

--- Lines shown for an explanation: header, the schedule text, then the
--- steps as `file:line:col  message` (1-based, usable with gF).
function M.format_explanation(result, root)
  local lines = {}
  local header = 'racelens: ' .. tostring(result.race or 'data race')
  table.insert(lines, header)
  table.insert(lines, string.rep('=', math.min(80, #header)))
  local text = type(result.text) == 'string' and result.text:gsub('\r\n', '\n'):gsub('%s+$', '') or ''
  if text ~= '' then
    table.insert(lines, '')
    vim.list_extend(lines, vim.split(text, '\n', { plain = true }))
  end
  local steps = type(result.steps) == 'table' and result.steps or {}
  if #steps > 0 then
    table.insert(lines, '')
    table.insert(lines, 'Steps:')
    for i, step in ipairs(steps) do
      local start = step.range and step.range.start or { line = 0, character = 0 }
      table.insert(lines, string.format('  %d. %s:%d:%d  %s', i, uri_to_display(step.uri or '', root),
        start.line + 1, start.character + 1, tostring(step.message or '')))
    end
  end
  return lines
end

---------------------------------------------------------------------------
-- Clients
---------------------------------------------------------------------------

--- racelens clients, optionally only those attached to `bufnr`.
function M.get_clients(bufnr)
  local list
  if vim.lsp.get_clients then -- 0.10+
    list = vim.lsp.get_clients(bufnr and { bufnr = bufnr } or nil)
  elseif bufnr then
    list = vim.tbl_values(vim.lsp.buf_get_clients(bufnr))
  else
    list = vim.lsp.get_active_clients()
  end
  local out = {}
  for _, client in ipairs(list) do
    if client.name == M.name then
      table.insert(out, client)
    end
  end
  return out
end

local function client_stopped(client)
  return client == nil or client_call(client, 'is_stopped')
end

--- The client configuration for a root directory.
function M.make_client_config(root)
  local cfg = M.config
  local handlers = vim.tbl_extend('force', {
    ['workspace/configuration'] = M.configuration_handler,
  }, cfg.handlers or {})
  return {
    name = M.name,
    cmd = cfg.cmd,
    cmd_cwd = root,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    settings = cfg.settings,
    init_options = cfg.settings.racelens,
    capabilities = M.make_capabilities(cfg.capabilities),
    handlers = handlers,
    flags = cfg.flags,
    on_init = function(client, result)
      -- Neovim 0.7 does not negotiate the position encoding: take the one
      -- the server picked. (Newer versions do the same thing themselves.)
      local enc = M.encoding_from_result(result)
      if enc then
        client.offset_encoding = enc
      end
      if not vim.lsp.start then
        -- Neovim 0.7 does not push the settings after initialize; 0.8+ does.
        client_call(client, 'notify', 'workspace/didChangeConfiguration', { settings = cfg.settings })
      end
      if cfg.on_init then
        cfg.on_init(client, result)
      end
    end,
    on_attach = cfg.on_attach,
    on_exit = function(_, _, client_id)
      for root_dir, id in pairs(M._clients_by_root) do
        if id == client_id then
          M._clients_by_root[root_dir] = nil
        end
      end
    end,
  }
end

local warned_missing = false

--- Attaches buffer `bufnr` to the racelens client of its root directory,
--- starting the client if needed. Returns the client id or nil.
function M.attach(bufnr)
  if not M.config then
    M.setup({})
  end
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  if not api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return nil
  end
  local exe = M.config.cmd[1]
  if vim.fn.executable(exe) ~= 1 then
    if not warned_missing then
      warned_missing = true
      notify(string.format('server binary %q not found or not executable; '
        .. "pass cmd = { '/path/to/racelens', 'lsp' } to require('racelens').setup()", exe), vim.log.levels.ERROR)
    end
    return nil
  end
  local root = M.find_root(api.nvim_buf_get_name(bufnr), M.config.root_markers)
  local config = M.make_client_config(root)

  if vim.lsp.start then -- Neovim 0.8+
    return vim.lsp.start(config, {
      bufnr = bufnr,
      reuse_client = function(client, conf)
        return client.name == conf.name and client.config.root_dir == conf.root_dir
          and not client_stopped(client)
      end,
    })
  end

  -- Neovim 0.7: one client per root, reused across buffers.
  local id = M._clients_by_root[root]
  local client = id and vim.lsp.get_client_by_id(id)
  if client == nil or client_stopped(client) then
    id = vim.lsp.start_client(config)
    if id == nil then
      notify('could not start ' .. table.concat(M.config.cmd, ' '), vim.log.levels.ERROR)
      return nil
    end
    M._clients_by_root[root] = id
  end
  if not vim.lsp.buf_attach_client(bufnr, id) then
    return nil
  end
  return id
end

-- File extensions of C++ sources and headers (a project with any is C++).
M.cpp_extensions = { 'cc', 'cpp', 'cxx', 'c++', 'C', 'hpp', 'hh', 'hxx', 'h++', 'ipp', 'tpp' }

-- Folders not searched when classifying a project.
local skip_dirs = { ['.git'] = true, node_modules = true, target = true }

-- Root directory -> boolean (is it a C project), computed once per root.
M._c_projects = {}

--- Does `root` hold a C project: some .c file and no C++ source? Searches
--- at most `limit` directory entries (default 20000), hidden folders excluded.
function M.is_c_project(root, limit)
  if M._c_projects[root] ~= nil then
    return M._c_projects[root]
  end
  local cpp = {}
  for _, e in ipairs(M.cpp_extensions) do
    cpp[e] = true
  end
  local budget = limit or 20000
  local has_c, has_cpp = false, false
  local queue = { root }
  while #queue > 0 and budget > 0 and not has_cpp do
    local dir = table.remove(queue)
    local handle = uv.fs_scandir(dir)
    while handle and budget > 0 do
      local name, kind = uv.fs_scandir_next(handle)
      if name == nil then
        break
      end
      budget = budget - 1
      if kind == 'directory' then
        if name:sub(1, 1) ~= '.' and not skip_dirs[name] then
          table.insert(queue, dir .. '/' .. name)
        end
      else
        local ext = name:match('%.([^.]+)$')
        if ext == 'c' then
          has_c = true
        elseif ext and cpp[ext] then
          has_cpp = true
          break
        end
      end
    end
  end
  local result = has_c and not has_cpp
  M._c_projects[root] = result
  return result
end

--- Should buffer `bufnr` get the server? Buffers of the configured
--- filetypes do; with `c_headers`, so do `cpp` buffers of `.h` files in a
--- C project (see `is_c_project`).
function M.wants_buffer(bufnr)
  local ft = vim.bo[bufnr].filetype
  if vim.tbl_contains(M.config.filetypes, ft) then
    return true
  end
  if ft ~= 'cpp' or not M.config.c_headers or not vim.tbl_contains(M.config.filetypes, 'c') then
    return false
  end
  local name = api.nvim_buf_get_name(bufnr)
  if not name:match('%.h$') then
    return false
  end
  return M.is_c_project(M.find_root(name, M.config.root_markers))
end

local function matches_filetype(bufnr)
  return M.wants_buffer(bufnr)
end

---------------------------------------------------------------------------
-- Commands
---------------------------------------------------------------------------

--- Sends `racelens.explain` for `position` (LSP position in the client's
--- encoding; default: the cursor). `callback(err, result, client)`.
function M.request_explain(bufnr, position, callback)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local client = M.get_clients(bufnr)[1]
  if client == nil then
    callback('no racelens server is attached to this buffer', nil, nil)
    return
  end
  local uri = vim.uri_from_bufnr(bufnr)
  if position == nil then
    local win = vim.fn.bufwinid(bufnr)
    local params = vim.lsp.util.make_position_params(win ~= -1 and win or 0, client.offset_encoding)
    position = params.position
  end
  local params = {
    command = M.explain_command,
    arguments = { { uri = uri, position = position } },
  }
  client_call(client, 'request', 'workspace/executeCommand', params, function(err, result)
    callback(err, result, client)
  end, bufnr)
end

--- Shows an explanation in a floating window; returns its buffer and window.
function M.show_explanation(result, root)
  local lines = M.format_explanation(result, root)
  return vim.lsp.util.open_floating_preview(lines, nil, {
    border = 'rounded',
    focus_id = 'racelens_explain',
    max_width = math.max(40, math.floor(vim.o.columns * 0.8)),
    max_height = math.max(10, math.floor(vim.o.lines * 0.6)),
  })
end

--- :RacelensExplain
function M.explain()
  local bufnr = api.nvim_get_current_buf()
  M.request_explain(bufnr, nil, function(err, result, client)
    if err then
      local msg = type(err) == 'table' and (err.message or vim.inspect(err)) or tostring(err)
      notify('explain failed: ' .. msg, vim.log.levels.ERROR)
      return
    end
    if result == nil or result == vim.NIL or type(result) ~= 'table' then
      notify('no data race at the cursor')
      return
    end
    M.show_explanation(result, client and client.config.root_dir)
  end)
end

--- :RacelensRestart: stops every racelens client, then re-attaches the
--- loaded buffers of the configured filetypes once they have stopped.
function M.restart()
  local clients = M.get_clients()
  for _, client in ipairs(clients) do
    client_call(client, 'stop')
  end
  M._clients_by_root = {}
  local deadline = uv.now() + 5000
  local forced = false
  local timer = uv.new_timer()
  timer:start(50, 50, vim.schedule_wrap(function()
    local all_stopped = true
    for _, client in ipairs(clients) do
      if not client_stopped(client) then
        all_stopped = false
      end
    end
    if not all_stopped and not forced and uv.now() > deadline - 3000 then
      forced = true
      for _, client in ipairs(clients) do
        client_call(client, 'stop', true)
      end
    end
    if all_stopped or uv.now() > deadline then
      timer:stop()
      timer:close()
      for _, bufnr in ipairs(api.nvim_list_bufs()) do
        if api.nvim_buf_is_loaded(bufnr) and matches_filetype(bufnr) then
          M.attach(bufnr)
        end
      end
      notify('server restarted')
    end
  end))
end

---------------------------------------------------------------------------
-- Setup
---------------------------------------------------------------------------

function M.setup(opts)
  opts = opts or {}
  local cfg = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  -- Lists are replaced, not merged.
  for _, key in ipairs({ 'cmd', 'filetypes', 'root_markers' }) do
    if opts[key] ~= nil then
      cfg[key] = opts[key]
    end
  end
  if type(cfg.cmd) == 'string' then
    cfg.cmd = { cfg.cmd, 'lsp' }
  end
  cfg.settings = M.normalize_settings(opts.settings)
  M.config = cfg

  local group = api.nvim_create_augroup('racelens', { clear = true })
  if cfg.autostart then
    local patterns = vim.deepcopy(cfg.filetypes)
    if cfg.c_headers and vim.tbl_contains(patterns, 'c') and not vim.tbl_contains(patterns, 'cpp') then
      table.insert(patterns, 'cpp')
    end
    api.nvim_create_autocmd('FileType', {
      group = group,
      pattern = patterns,
      callback = function(args)
        if M.wants_buffer(args.buf) then
          M.attach(args.buf)
        end
      end,
      desc = 'racelens: attach the language server',
    })
    -- Buffers that were already open before setup().
    for _, bufnr in ipairs(api.nvim_list_bufs()) do
      if api.nvim_buf_is_loaded(bufnr) and matches_filetype(bufnr) then
        M.attach(bufnr)
      end
    end
  end

  api.nvim_create_user_command('RacelensExplain', M.explain, {
    desc = 'racelens: explain the data race under the cursor',
  })
  api.nvim_create_user_command('RacelensRestart', M.restart, {
    desc = 'racelens: restart the language server',
  })
  api.nvim_create_user_command('RacelensStart', function()
    M.attach(0)
  end, { desc = 'racelens: attach the current buffer to the language server' })
  return M
end

return M
