using System.Diagnostics;
using System.Globalization;


namespace Queue.Local;

/// <summary>A real service process (Queue.Api, Queue.Admin or Queue.Scheduler) started from the test's output folder.</summary>
public sealed class ServiceProcess : IAsyncDisposable
{
    private readonly Process process;
    private readonly System.Text.StringBuilder output = new();

    private ServiceProcess(Process process, string url)
    {
        this.process = process;
        Url = url;
    }

    public string Url { get; }

    public int Pid => process.Id;

    /// <summary>Resident set size right now, in bytes, from /proc; 0 once the process is gone.</summary>
    public long RssBytes()
    {
        try
        {
            return Rss();
        }
        catch (IOException)
        {
            return 0;
        }
    }

    private long Rss()
    {
        foreach (var line in File.ReadLines($"/proc/{process.Id}/status"))
        {
            if (line.StartsWith("VmRSS:", StringComparison.Ordinal))
            {
                var kb = long.Parse(line.Split(' ', StringSplitOptions.RemoveEmptyEntries)[1], CultureInfo.InvariantCulture);
                return kb * 1024;
            }
        }
        return 0;
    }

    public string Output
    {
        get
        {
            lock (output)
            {
                return output.ToString();
            }
        }
    }

    /// <summary>Starts <paramref name="assembly"/>.dll from this program's own output folder on a free loopback port (or on <paramref name="url"/>).</summary>
    public static ServiceProcess Start(string assembly, string connectionString, IDictionary<string, string>? env = null, string? url = null)
    {
        // A given url restarts a service where a balancer expects it.
        url ??= "http://127.0.0.1:" + PrivateMariaDb.FreePort().ToString(CultureInfo.InvariantCulture);
        var dll = Path.Combine(AppContext.BaseDirectory, assembly + ".dll");
        var psi = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        psi.ArgumentList.Add(dll);
        psi.Environment["ConnectionStrings__Queue"] = connectionString;
        psi.Environment["ASPNETCORE_URLS"] = url;
        psi.Environment["Urls"] = url;
        psi.Environment["Admin__AllowHttp"] = "true"; // plain HTTP on loopback: the Admin's cookies must not demand HTTPS
        foreach (var (k, v) in env ?? new Dictionary<string, string>())
        {
            psi.Environment[k] = v;
        }
        var p = Process.Start(psi)!;
        var sp = new ServiceProcess(p, url);
        p.OutputDataReceived += (_, e) => sp.Append(e.Data);
        p.ErrorDataReceived += (_, e) => sp.Append(e.Data);
        p.BeginOutputReadLine();
        p.BeginErrorReadLine();
        return sp;
    }

    private void Append(string? line)
    {
        if (line is null)
        {
            return;
        }
        lock (output)
        {
            output.AppendLine(line);
        }
    }

    /// <summary>Waits until <paramref name="path"/> answers 200, or fails with the process's output.</summary>
    public async Task WaitHealthyAsync(string path = "/healthz", int seconds = 60)
    {
        using var http = new HttpClient { Timeout = TimeSpan.FromSeconds(2) };
        var deadline = DateTime.UtcNow.AddSeconds(seconds);
        while (DateTime.UtcNow < deadline)
        {
            if (process.HasExited)
            {
                throw new InvalidOperationException($"process exited with {process.ExitCode}:\n{Output}");
            }
            try
            {
                using var r = await http.GetAsync(new Uri(Url + path));
                if (r.IsSuccessStatusCode)
                {
                    return;
                }
            }
            catch (HttpRequestException)
            {
            }
            catch (TaskCanceledException)
            {
            }
            await Task.Delay(100);
        }
        throw new TimeoutException($"{Url}{path} did not become healthy:\n{Output}");
    }

    /// <summary>The exit code once the process ended by itself within <paramref name="timeout"/>; null while it still runs.</summary>
    public async Task<int?> WaitForExitAsync(TimeSpan timeout)
    {
        using var cts = new CancellationTokenSource(timeout);
        try
        {
            await process.WaitForExitAsync(cts.Token);
            return process.ExitCode;
        }
        catch (OperationCanceledException)
        {
            return null;
        }
    }

    /// <summary>SIGKILL: the process gets no chance to clean up, as in a crash.</summary>
    public void Kill() => process.Kill(entireProcessTree: true);

    public async ValueTask DisposeAsync()
    {
        if (!process.HasExited)
        {
            process.Kill(entireProcessTree: true);
            await process.WaitForExitAsync();
        }
        process.Dispose();
    }
}
