using System.Diagnostics;
using System.Globalization;
using System.Text;

namespace Queue.Tests.Cluster;

/// <summary>
/// Issue 37: scripts/cluster.sh (and ./run.sh) supervise what they start. The supervisor of scripts/services.sh runs
/// here on a stand-in service (sh execing sleep), so neither HAProxy nor MariaDB nor a build of the services is needed;
/// the scripts run exactly the same code on Queue.Api.
/// </summary>
public sealed class SupervisorTests
{
    // $1 services.sh, $2 the state folder, $3 the file each start of the stand-in appends its pid to (sh's pid is the
    // service's: it execs sleep).
    private const string Script = """
        set -euo pipefail
        ROOT=$2
        STATE=$2
        . "$1"
        trap stop_all INT TERM EXIT
        start_other dummy sh -c 'echo $$ >> "$1"; exec sleep 1000' dummy "$3"
        watch_all
        """;

    [Fact]
    public async Task A_service_killed_with_kill_9_is_restarted_by_the_supervisor_and_stop_stops_the_restarted_one()
    {
        var dir = Directory.CreateTempSubdirectory("queue-supervise-").FullName;
        var pidFile = Path.Combine(dir, "pids");
        var output = new StringBuilder();
        var psi = new ProcessStartInfo("bash") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (var arg in new[] { "-c", Script, "supervisor-test", Path.Combine(RepoRoot(), "scripts", "services.sh"), dir, pidFile })
        {
            psi.ArgumentList.Add(arg);
        }
        using var script = Process.Start(psi)!;
        void Append(string? line)
        {
            if (line is not null)
            {
                lock (output)
                {
                    output.AppendLine(line);
                }
            }
        }
        script.OutputDataReceived += (_, e) => Append(e.Data);
        script.ErrorDataReceived += (_, e) => Append(e.Data);
        script.BeginOutputReadLine();
        script.BeginErrorReadLine();
        string Output()
        {
            lock (output)
            {
                return output.ToString();
            }
        }
        try
        {
            Assert.True(await Eventually.HoldsAsync(() => Task.FromResult(Pids(pidFile).Length == 1), TimeSpan.FromSeconds(10)),
                "the stand-in service never started:\n" + Output());
            var first = Pids(pidFile)[0];
            using (var victim = Process.GetProcessById(first))
            {
                victim.Kill(); // SIGKILL, as kill -9
            }

            Assert.True(await Eventually.HoldsAsync(() => Task.FromResult(Pids(pidFile) is [_, var second] && Alive(second)), TimeSpan.FromSeconds(15)),
                "the killed service was not restarted:\n" + Output());
            var restarted = Pids(pidFile)[1];
            Assert.NotEqual(first, restarted);
            Assert.False(script.HasExited, "the script stopped instead of restarting:\n" + Output());
            Assert.Contains($"[supervisor] dummy (pid {first}) exited with status 137 (signal 9)", Output(), StringComparison.Ordinal);

            await SignalAsync("TERM", script.Id);
            Assert.True(await Eventually.HoldsAsync(() => Task.FromResult(script.HasExited && !Alive(restarted)), TimeSpan.FromSeconds(15)),
                $"TERM left the script (exited: {script.HasExited}) or the restarted service (pid {restarted}, alive: {Alive(restarted)}) running:\n" + Output());
            Assert.Equal(0, script.ExitCode);
        }
        finally
        {
            // A failed run must not leave its sleep 1000 behind.
            foreach (var pid in Pids(pidFile).Where(Alive))
            {
                await SignalAsync("KILL", pid);
            }
            if (!script.HasExited)
            {
                script.Kill(entireProcessTree: true);
            }
            Directory.Delete(dir, recursive: true);
        }
    }

    private static int[] Pids(string file) =>
        File.Exists(file)
            ? File.ReadAllLines(file).Where(l => l.Length > 0).Select(l => int.Parse(l, CultureInfo.InvariantCulture)).ToArray()
            : [];

    /// <summary>Running, and not a zombie (an exited child stays one until its parent waits for it).</summary>
    private static bool Alive(int pid)
    {
        try
        {
            var stat = File.ReadAllText($"/proc/{pid}/stat");
            return stat[(stat.LastIndexOf(") ", StringComparison.Ordinal) + 2)..][0] != 'Z';
        }
        catch (IOException)
        {
            return false;
        }
    }

    private static async Task SignalAsync(string signal, int pid)
    {
        using var kill = Process.Start("kill", ["-" + signal, pid.ToString(CultureInfo.InvariantCulture)]);
        await kill.WaitForExitAsync();
    }

    private static string RepoRoot()
    {
        var dir = new DirectoryInfo(AppContext.BaseDirectory);
        while (dir is not null && !File.Exists(Path.Combine(dir.FullName, "Queue.slnx")))
        {
            dir = dir.Parent;
        }
        return dir?.FullName ?? throw new InvalidOperationException("Queue.slnx not found above the test's folder");
    }
}
