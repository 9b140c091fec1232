using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using MySqlConnector;

namespace Queue.Local;

/// <summary>
/// A private MariaDB server on 127.0.0.1, owned by this machine's user. The run command, the tests and the benchmarks
/// all start their database through this one class, so they all run with the same, deliberate server settings.
/// </summary>
public sealed class PrivateMariaDb : IAsyncDisposable
{
    private readonly Process? watchdog;
    private readonly bool ownsServer;

    private PrivateMariaDb(string directory, int port, Process? watchdog, bool ownsServer)
    {
        Directory = directory;
        Port = port;
        this.watchdog = watchdog;
        this.ownsServer = ownsServer;
    }

    public string Directory { get; }

    public int Port { get; }

    /// <summary>Connection string for the server's root account, without a database.</summary>
    public string ServerConnectionString => new MySqlConnectionStringBuilder
    {
        Server = "127.0.0.1",
        Port = (uint)Port,
        UserID = "root",
        Password = "",
        AllowUserVariables = true,
        Pooling = true,
        MaximumPoolSize = 200,
    }.ConnectionString;

    public string ConnectionStringFor(string database) =>
        new MySqlConnectionStringBuilder(ServerConnectionString) { Database = database }.ConnectionString;

    /// <summary>Buffer pool size. 4 GiB by default: this 24 GiB box also runs the services, the tests and a load
    /// generator, while 10M queued items with their indexes need about 3 GiB to stay in memory.</summary>
    public static string DefaultBufferPool => Environment.GetEnvironmentVariable("QUEUE_DB_BUFFER_POOL") ?? "4G";

    /// <summary>
    /// Starts a throwaway server in a fresh temporary directory. The server is killed and the directory removed when
    /// this process exits, however it exits: a watchdog shell polls our pid, so a crashed test run leaves nothing behind.
    /// </summary>
    public static Task<PrivateMariaDb> StartEphemeralAsync(string bufferPool = "512M", CancellationToken ct = default) =>
        StartEphemeralAsync(bufferPool, [], ct);

    /// <summary>A throwaway server, as above, with <paramref name="extraArgs"/> after the usual settings.</summary>
    public static Task<PrivateMariaDb> StartEphemeralAsync(string bufferPool, IReadOnlyList<string> extraArgs, CancellationToken ct = default)
    {
        RemoveLeftovers(Path.GetTempPath(), TimeSpan.FromMinutes(10));
        var dir = Path.Combine(Path.GetTempPath(), EphemeralPrefix + Guid.NewGuid().ToString("N")[..12]);
        return StartAsync(dir, FreePort(), bufferPool, removeOnExit: true, tiedToThisProcess: true, ct, extraArgs);
    }

    /// <summary>Throwaway servers' directories are named with this prefix under the temporary directory.</summary>
    public const string EphemeralPrefix = "queue-db-";

    /// <summary>
    /// Removes throwaway servers' directories that nothing owns any more: older than <paramref name="minAge"/> (so a
    /// directory still being installed stays) and without a live server (its pid file gone or naming a dead process).
    /// The watchdog removes a directory when its owner ends, but a kill of the whole process group takes the watchdog
    /// too, and a kill during mariadb-install-db comes before it: on 2026-12-07 such runs had left 28 directories of
    /// 150 MB each. A pid that was reused keeps its directory, which errs on the safe side.
    /// </summary>
    public static int RemoveLeftovers(string parent, TimeSpan minAge)
    {
        var removed = 0;
        foreach (var dir in System.IO.Directory.EnumerateDirectories(parent, EphemeralPrefix + "*"))
        {
            try
            {
                if (DateTime.UtcNow - System.IO.Directory.GetLastWriteTimeUtc(dir) < minAge || ServerAlive(PidFile(dir)))
                {
                    continue;
                }
                System.IO.Directory.Delete(dir, recursive: true);
                removed++;
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                // Another user's, or removed meanwhile by its own watchdog: not ours to clean.
            }
        }
        return removed;
    }

    /// <summary>Where a server started here writes its pid (run.sh and scripts/cluster.sh read it there too).</summary>
    private static string PidFile(string directory) => Path.Combine(directory, "mariadbd.pid");

    private static bool ServerAlive(string pidFile)
    {
        if (!File.Exists(pidFile) || !int.TryParse(File.ReadAllText(pidFile).Trim(), CultureInfo.InvariantCulture, out var pid))
        {
            return false;
        }
        try
        {
            using var process = Process.GetProcessById(pid);
            return !process.HasExited;
        }
        catch (ArgumentException)
        {
            return false; // no such process
        }
    }

    /// <summary>
    /// Starts (or reuses, if it is already running) the persistent server in <paramref name="directory"/>, as the
    /// run command does. <paramref name="tiedToThisProcess"/> decides whether the server stops when this process ends.
    /// </summary>
    public static Task<PrivateMariaDb> StartOrAttachAsync(string directory, int port, bool tiedToThisProcess, CancellationToken ct = default) =>
        StartOrAttachAsync(directory, port, tiedToThisProcess, [], ct);

    /// <summary>As above, with <paramref name="extraArgs"/> after the usual settings when the server is started here.</summary>
    public static async Task<PrivateMariaDb> StartOrAttachAsync(string directory, int port, bool tiedToThisProcess, IReadOnlyList<string> extraArgs,
        CancellationToken ct = default)
    {
        directory = Path.GetFullPath(directory);
        var existing = await TryAttachAsync(directory, port, ct);
        if (existing is not null)
        {
            return existing;
        }
        return await StartAsync(directory, port, DefaultBufferPool, removeOnExit: false, tiedToThisProcess, ct, extraArgs);
    }

    private static async Task<PrivateMariaDb?> TryAttachAsync(string directory, int port, CancellationToken ct)
    {
        var pidFile = PidFile(directory);
        if (!File.Exists(pidFile))
        {
            return null;
        }
        var candidate = new PrivateMariaDb(directory, port, null, ownsServer: false);
        return await candidate.CanConnectAsync(ct) ? candidate : null;
    }

    /// <summary>
    /// Starts a server tied to this process in <paramref name="directory"/> (kept on exit), with <paramref name="extraArgs"/>
    /// after the usual settings: a test that needs a small redo log on a small disk, say.
    /// </summary>
    public static Task<PrivateMariaDb> StartInDirectoryAsync(string directory, int port, IReadOnlyList<string> extraArgs, CancellationToken ct = default) =>
        StartAsync(Path.GetFullPath(directory), port, "64M", removeOnExit: false, tiedToThisProcess: true, ct, extraArgs);

    private static async Task<PrivateMariaDb> StartAsync(string directory, int port, string bufferPool, bool removeOnExit, bool tiedToThisProcess, CancellationToken ct,
        IReadOnlyList<string>? extraArgs = null)
    {
        var mariadbd = FindBinary("mariadbd") ?? throw new InvalidOperationException(
            "mariadbd was not found. Install it with: apt-get install -y mariadb-server (./run.sh and ./test.sh do this for you).");
        var installDb = FindBinary("mariadb-install-db") ?? throw new InvalidOperationException("mariadb-install-db was not found.");
        var dataDir = Path.Combine(directory, "data");
        // Its own temporary directory: servers sharing /tmp (tests start several at once) can remove each other's
        // temporary tables, and mariadb-install-db then fails ("Could not remove temporary table '/tmp/#sql-temptable-...',
        // error: 2", then "Unknown table 'mysql.tmp_user_sys'"), taking every test that needed that server with it.
        var tmpDir = Path.Combine(directory, "tmp");
        System.IO.Directory.CreateDirectory(tmpDir);
        var asRoot = Environment.UserName == "root";

        if (!System.IO.Directory.Exists(Path.Combine(dataDir, "mysql")))
        {
            var args = new List<string> { $"--datadir={dataDir}", $"--tmpdir={tmpDir}", "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve" };
            if (asRoot)
            {
                args.Add("--user=root");
            }
            await RunToEndAsync(installDb, args, ct);
        }

        var serverArgs = new List<string>
        {
            "--no-defaults",
            $"--datadir={dataDir}",
            $"--tmpdir={tmpDir}",
            $"--port={port.ToString(CultureInfo.InvariantCulture)}",
            "--bind-address=127.0.0.1",          // never reachable from another machine
            $"--socket={Path.Combine(directory, "mariadbd.sock")}",
            $"--pid-file={PidFile(directory)}",
            "--skip-name-resolve",
            "--skip-log-bin",                    // no replica reads it, and it would add a second fsync to every commit
            "--innodb-flush-log-at-trx-commit=1", // a claim or upload that was acknowledged survives a crash
            "--max-allowed-packet=256M",         // 16 MiB documents and 64 MiB requests, with room for protocol overhead
            "--transaction-isolation=READ-COMMITTED", // locking reads without gap locks: fewer deadlocks between claimers
            $"--innodb-buffer-pool-size={bufferPool}", // see DefaultBufferPool
            "--innodb-log-file-size=1G",         // bulk ingest must not stall on redo checkpoints
            "--innodb-lock-wait-timeout=5",      // a stuck lock surfaces as 1205 quickly, and the claim is retried
            "--max-connections=1000",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_unicode_ci",
            "--log-error=" + Path.Combine(directory, "mariadbd.err"),
        };
        if (asRoot)
        {
            serverArgs.Add("--user=root");
        }
        // For profiling runs only, e.g. QUEUE_MARIADB_ARGS="--performance-schema=ON" to read statement digests.
        serverArgs.AddRange((Environment.GetEnvironmentVariable("QUEUE_MARIADB_ARGS") ?? "").Split(' ', StringSplitOptions.RemoveEmptyEntries));
        serverArgs.AddRange(extraArgs ?? []);

        // The server runs under a small shell that stops it (and removes a throwaway directory) as soon as the owning
        // process is gone, so neither a crash nor a kill -9 of a test run leaves a mariadbd behind.
        var owner = tiedToThisProcess ? Environment.ProcessId.ToString(CultureInfo.InvariantCulture) : "";
        var cleanup = removeOnExit ? directory : "";
        const string script = """
            "$@" & child=$!
            stop() { kill -TERM "$child" 2>/dev/null; wait "$child"; [ -n "$CLEANUP" ] && rm -rf "$CLEANUP"; exit 0; }
            trap stop TERM INT HUP
            while kill -0 "$child" 2>/dev/null; do
              if [ -n "$OWNER" ] && ! kill -0 "$OWNER" 2>/dev/null; then stop; fi
              sleep 0.5
            done
            [ -n "$CLEANUP" ] && rm -rf "$CLEANUP"
            """;
        // A server that outlives this process (./run.sh, scripts/cluster.sh) runs in a session of its own, so a Ctrl-C in
        // the terminal reaches the services but not the database: the script stops the services first, while the
        // database still answers (a Scheduler's Quartz shuts down through it), and the database last.
        var psi = new ProcessStartInfo(tiedToThisProcess ? "/bin/sh" : "setsid") { UseShellExecute = false, RedirectStandardInput = true };
        if (!tiedToThisProcess)
        {
            psi.ArgumentList.Add("/bin/sh");
        }
        psi.ArgumentList.Add("-c");
        psi.ArgumentList.Add(script);
        psi.ArgumentList.Add("mariadb-watchdog");
        psi.ArgumentList.Add(mariadbd);
        foreach (var a in serverArgs)
        {
            psi.ArgumentList.Add(a);
        }
        psi.Environment["OWNER"] = owner;
        psi.Environment["CLEANUP"] = cleanup;
        var proc = Process.Start(psi) ?? throw new InvalidOperationException("could not start mariadbd");

        var db = new PrivateMariaDb(directory, port, proc, ownsServer: true);
        var deadline = DateTime.UtcNow.AddSeconds(60);
        while (!await db.CanConnectAsync(ct))
        {
            if (proc.HasExited || DateTime.UtcNow > deadline)
            {
                var log = File.Exists(Path.Combine(directory, "mariadbd.err")) ? await File.ReadAllTextAsync(Path.Combine(directory, "mariadbd.err"), ct) : "";
                throw new InvalidOperationException($"mariadbd did not accept connections on port {port}.\n{log[Math.Max(0, log.Length - 2000)..]}");
            }
            await Task.Delay(50, ct);
        }
        return db;
    }

    /// <summary>Whether the server accepts a connection now.</summary>
    public Task<bool> AnswersAsync(CancellationToken ct = default) => CanConnectAsync(ct);

    private async Task<bool> CanConnectAsync(CancellationToken ct)
    {
        try
        {
            var csb = new MySqlConnectionStringBuilder(ServerConnectionString) { Pooling = false, ConnectionTimeout = 2 };
            await using var conn = new MySqlConnection(csb.ConnectionString);
            await conn.OpenAsync(ct);
            return true;
        }
        catch (MySqlException)
        {
            return false;
        }
    }

    /// <summary>Creates an empty database (dropping any with that name).</summary>
    public Task<string> CreateDatabaseAsync(string name, CancellationToken ct = default) =>
        RunOnDatabaseAsync(name, "DROP DATABASE IF EXISTS `{0}`; CREATE DATABASE `{0}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci", ct);

    /// <summary>Creates the database unless it exists (./run.sh keeps its data between runs).</summary>
    public Task<string> EnsureDatabaseAsync(string name, CancellationToken ct = default) =>
        RunOnDatabaseAsync(name, "CREATE DATABASE IF NOT EXISTS `{0}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci", ct);

    private async Task<string> RunOnDatabaseAsync(string name, string sql, CancellationToken ct)
    {
        // Database names cannot be parameters; the name is checked to be a plain identifier first.
        if (name.Length == 0 || !name.All(c => char.IsAsciiLetterOrDigit(c) || c == '_'))
        {
            throw new ArgumentException("database names are letters, digits and underscores", nameof(name));
        }
        await using var conn = new MySqlConnection(ServerConnectionString);
        await conn.OpenAsync(ct);
        await using var cmd = conn.CreateCommand();
        cmd.CommandText = string.Format(CultureInfo.InvariantCulture, sql, name);
        await cmd.ExecuteNonQueryAsync(ct);
        return ConnectionStringFor(name);
    }

    public async ValueTask DisposeAsync()
    {
        if (!ownsServer || watchdog is null)
        {
            return;
        }
        MySqlConnection.ClearAllPools();
        if (!watchdog.HasExited)
        {
            using (var kill = Process.Start("kill", ["-TERM", watchdog.Id.ToString(CultureInfo.InvariantCulture)]))
            {
                await kill!.WaitForExitAsync();
            }
            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(30));
            try
            {
                await watchdog.WaitForExitAsync(cts.Token);
            }
            catch (OperationCanceledException)
            {
                watchdog.Kill(entireProcessTree: true);
            }
        }
        watchdog.Dispose();
    }

    private static readonly HashSet<int> HandedOut = [];

    /// <summary>
    /// A free loopback port below Linux's ephemeral range (32768+), so that no outgoing connection (to MariaDB, say)
    /// can take it between this check and the server binding it, as an OS-assigned ephemeral port could.
    /// </summary>
    /// <remarks>
    /// A port is handed out once per process: two servers started at the same moment could otherwise both see the same
    /// port free, and the loser's health check would then be answered by the winner (a test talking to the wrong server).
    /// </remarks>
    public static int FreePort()
    {
        for (var attempt = 0; attempt < 200; attempt++)
        {
            var port = Random.Shared.Next(20000, 32000);
            lock (HandedOut)
            {
                if (!HandedOut.Add(port))
                {
                    continue;
                }
            }
            try
            {
                using var l = new TcpListener(IPAddress.Loopback, port);
                l.Start();
                return port;
            }
            catch (SocketException)
            {
            }
        }
        throw new InvalidOperationException("no free loopback port between 20000 and 32000");
    }

    private static string? FindBinary(string name)
    {
        var paths = (Environment.GetEnvironmentVariable("PATH") ?? "").Split(':').Concat(["/usr/sbin", "/usr/bin", "/sbin"]);
        return paths.Select(p => Path.Combine(p, name)).FirstOrDefault(File.Exists);
    }

    private static async Task RunToEndAsync(string file, IEnumerable<string> args, CancellationToken ct)
    {
        var psi = new ProcessStartInfo(file) { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (var a in args)
        {
            psi.ArgumentList.Add(a);
        }
        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync(ct);
        var stderr = p.StandardError.ReadToEndAsync(ct);
        await p.WaitForExitAsync(ct);
        if (p.ExitCode != 0)
        {
            throw new InvalidOperationException($"{file} failed ({p.ExitCode}): {await stderr}{await stdout}");
        }
    }
}
