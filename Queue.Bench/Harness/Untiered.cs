using System.Diagnostics;
using System.Runtime.InteropServices;

namespace Queue.Bench.Harness;

/// <summary>
/// A scenario whose measured work all runs in other processes (the Api, mariadbd, the peer) runs itself again with
/// tiered compilation off. The load generator shares the box's two cores with what it measures, and with tiering its
/// JIT recompiled the load's hot paths on a background thread during the measured phases: 11 % of the box in a batched
/// enqueue (<c>perf record -a</c>, docs/DESIGN.md "Completions in flight as the peer's, and the load generator out of
/// the way"). Compiled once, fully optimized, it pays that at start-up instead. Scenarios that run their subject in this
/// process (<c>claim</c>'s raw claims, <c>rewrite</c>'s claimers and rewriter) keep the default: without tiering's
/// profile-guided code those claimers ran slower beside a rewrite (claim p99 ratio 1.49-1.64x against 1.37-1.44x, back
/// to back). The services started by the child inherit the variable; Queue.Api runs untiered anyway (its csproj). A
/// DOTNET_TieredCompilation set by the caller is left as it is, so a tiered load generator can still be compared.
/// </summary>
internal static class Untiered
{
    private const string Variable = "DOTNET_TieredCompilation";

    /// <summary>Whether tiering was chosen for this process: by <see cref="RunAgainAsync"/>, or by whoever started it.</summary>
    public static bool IsChosen => Environment.GetEnvironmentVariable(Variable) is not null;

    public static bool IsOff => Environment.GetEnvironmentVariable(Variable) is "0";

    /// <summary>Runs this program again as <c><paramref name="scenario"/> <paramref name="args"/></c>, untiered; its exit code.</summary>
    public static async Task<int> RunAgainAsync(string scenario, string[] args)
    {
        var host = Environment.ProcessPath ?? throw new InvalidOperationException("no process path to run again");
        var psi = new ProcessStartInfo(host) { UseShellExecute = false };
        if (Path.GetFileNameWithoutExtension(host) == "dotnet")
        {
            psi.ArgumentList.Add(typeof(Untiered).Assembly.Location);
        }
        psi.ArgumentList.Add(scenario);
        foreach (var a in args)
        {
            psi.ArgumentList.Add(a);
        }
        psi.Environment[Variable] = "0";
        using var child = Process.Start(psi) ?? throw new InvalidOperationException("could not run the scenario again");
        // A TERM or Ctrl-C for this process (timeout, flock's caller) ends the child and what it started too.
        void Stop(PosixSignalContext c)
        {
            c.Cancel = true;
            if (!child.HasExited)
            {
                child.Kill(entireProcessTree: true);
            }
        }
        using var term = PosixSignalRegistration.Create(PosixSignal.SIGTERM, Stop);
        using var interrupt = PosixSignalRegistration.Create(PosixSignal.SIGINT, Stop);
        await child.WaitForExitAsync();
        return child.ExitCode;
    }
}
