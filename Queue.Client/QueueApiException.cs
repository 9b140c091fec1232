using System.Net;

namespace Queue.Client;

/// <summary>Every error answer of Queue, with its RFC 9457 ProblemDetails; also a transport failure that outlived the retries.</summary>
public sealed class QueueApiException : Exception
{
    public QueueApiException(HttpStatusCode status, QueueProblem problem, Exception? inner = null)
        : base($"{(int)status} {problem.Title}: {problem.Detail}", inner)
    {
        Status = status;
        Problem = problem;
    }

    public QueueApiException() : this(HttpStatusCode.InternalServerError, new QueueProblem(null, null, 500, null, null))
    {
    }

    public QueueApiException(string message) : this(message, null)
    {
    }

    public QueueApiException(string message, Exception? inner) : base(message, inner)
    {
        Status = HttpStatusCode.ServiceUnavailable;
        Problem = new QueueProblem(null, "Service Unavailable", 503, message, null);
    }

    /// <summary>The HTTP status; 503 when the connection failed on every attempt.</summary>
    public HttpStatusCode Status { get; }

    public QueueProblem Problem { get; }

    /// <summary>409 on a lease call: the lease expired or someone else holds the item; drop the result.</summary>
    public bool IsStaleLease => Status == HttpStatusCode.Conflict;
}

/// <summary>RFC 9457 problem details, as docs/CONTRACT.md sends them; <c>Errors</c> names every bad field of a 400.</summary>
public sealed record QueueProblem(string? Type, string? Title, int? Status, string? Detail, IReadOnlyDictionary<string, string[]>? Errors);
